//! Helpers of the fast path's unit tests.

pub(super) fn all_chars() -> impl Iterator<Item = char> {
    (0..=0x10FFFFu32).filter_map(char::from_u32)
}

/// Random strings: fewer than `max_pieces` of `pieces` joined, drawn by an xorshift64
/// generator from `seed` (the same strings on every run).
pub(super) fn random_joins<'p>(
    pieces: &'p [&'p str],
    seed: u64,
    max_pieces: u64,
) -> impl FnMut() -> String + 'p {
    let mut state = seed;
    move || {
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let len = next() % max_pieces;
        (0..len)
            .map(|_| pieces[(next() % pieces.len() as u64) as usize])
            .collect()
    }
}
