"""simhash_ext from SQLAlchemy 2.0 (ORM, psycopg 3 driver).

The model's text column is attached when the table is created (an after_create DDL event), so the
duplicate trigger is part of the schema the ORM makes. Committing a near-duplicate raises
sqlalchemy.exc.IntegrityError, as a unique constraint would; its .orig is psycopg's UniqueViolation
with the DETAIL, and .orig.diag.constraint_name is the attachment's trigger name (simhash_body), which
tells it from a duplicate key (whose constraint is its index). Lookups go through
simhash_near_duplicates() with bound parameters.

Connects with the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE). Run:
    PGDATABASE=mydb python sqlalchemy_example.py
"""

import re
import sys

from sqlalchemy import DDL, create_engine, event, func, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


class Post(Base):
    __tablename__ = "posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    author: Mapped[str]
    body: Mapped[str]


# simhash_attach adds body_simhash and the band columns, indexes and the trigger; they are the
# extension's, so the model does not map them.
event.listen(
    Post.__table__,
    "after_create",
    DDL("SELECT simhash_attach('posts', 'body', on_duplicate => 'error')"),
)

# The constraint name of a near-duplicate: the trigger simhash_attach made, simhash_<text column>.
NEAR_DUPLICATE = "simhash_body"

FIRST = "The museum reopens on Saturday with a new wing for modern art and a rooftop cafe."
REPOST = "The museum will reopen on Saturday with a new wing for modern art and a rooftop cafe."
OTHER = "第十届春茶节在龙井村开幕，游客可以现场体验采茶和炒茶。"


def main() -> None:
    # An empty URL after the driver name: psycopg takes everything from the libpq environment.
    engine = create_engine("postgresql+psycopg://")
    with engine.begin() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS simhash_ext"))
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)

    with Session(engine) as session:
        session.add_all([Post(id=1, author="ana", body=FIRST), Post(id=2, author="li", body=OTHER)])
        session.commit()

        def rejection(write) -> IntegrityError | None:
            """Runs write() and commits; on an IntegrityError rolls back and returns it."""
            try:
                write()
                session.commit()
            except IntegrityError as e:
                session.rollback()
                return e
            return None

        e = rejection(lambda: session.add(Post(id=3, author="bot", body=REPOST)))
        if e is None or e.orig.diag.constraint_name != NEAR_DUPLICATE:
            sys.exit(f"the near-duplicate post was not rejected as one: {e!r}")
        diag = e.orig.diag
        print(f"rejected: {type(e).__name__} from {type(e.orig).__name__}, SQLSTATE {e.orig.sqlstate}, constraint {diag.constraint_name}")
        print(f"          DETAIL: {diag.message_detail}")
        assert e.orig.sqlstate == "23505", e.orig.sqlstate
        m = re.fullmatch(r"Key \(id\)=\(1\) is at Hamming distance (\d+) \(max_distance 7\)"
                         r" and has similarity [01]\.\d{3} \(threshold 0\.4\)\.",
                         diag.message_detail or "")
        assert m, diag.message_detail
        distance = int(m[1])

        # A duplicate primary key is an IntegrityError with SQLSTATE 23505 too, but names its index.
        e = rejection(lambda: session.execute(
            insert(Post).values(id=1, author="ana", body="The ferry timetable changes in May; the evening boat is dropped.")))
        assert e is not None and e.orig.diag.constraint_name == "posts_pkey", e
        assert session.scalar(select(func.count()).select_from(Post)) == 2
        assert session.scalar(select(func.hamming(func.simhash(FIRST), func.simhash(REPOST)))) == distance

        # Lookup: ids and distances of the posts near a text, then the ORM objects.
        near = session.execute(
            text("SELECT (n.item).id AS id, n.distance FROM simhash_near_duplicates(NULL::posts, :doc) n"),
            {"doc": REPOST},
        ).all()
        print("near the repost:", [(r.id, r.distance) for r in near])
        assert [(r.id, r.distance) for r in near] == [(1, distance)], near
        assert session.get(Post, near[0].id).author == "ana"

        # An ORM update to a text far from every other row is accepted; the trigger refingerprints it.
        post = session.get(Post, 2)
        post.body = "A new bakery opened next to the station; its rye bread sold out by noon."
        session.commit()
        fp = session.scalar(text("SELECT body_simhash FROM posts WHERE id = 2"))
        assert fp == session.scalar(select(func.simhash(post.body))), fp
    print("SQLAlchemy example: ok")


if __name__ == "__main__":
    main()
