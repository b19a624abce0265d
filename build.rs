//! Refuses, before anything else is compiled, a PostgreSQL major this extension does not support,
//! with a message naming the ones it does (cargo pgrx enables the feature `pgNN` of the major whose
//! pg_config it was given; without this check PostgreSQL 13 would fail with pages of binding errors).

const SUPPORTED: [u32; 5] = [14, 15, 16, 17, 18];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let refused: Vec<String> = std::env::vars()
        .filter_map(|(key, _)| key.strip_prefix("CARGO_FEATURE_PG")?.parse::<u32>().ok())
        .filter(|major| !SUPPORTED.contains(major))
        .map(|major| major.to_string())
        .collect();
    if !refused.is_empty() {
        eprintln!(
            "\nsimhash_ext does not support PostgreSQL {}: it builds for PostgreSQL 14, 15, 16, 17 and 18 \
             (features pg14 ... pg18; give cargo pgrx the pg_config of one of them with --pg-config).\n",
            refused.join(", ")
        );
        std::process::exit(1);
    }
}
