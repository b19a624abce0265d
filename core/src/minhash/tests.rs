use super::reference::{exact_jaccard, reference_densify, reference_shingles, reference_tokens};
use super::*;
use proptest::prelude::*;

fn d() -> MinHashOptions {
    MinHashOptions::default()
}

fn sig(text: &str) -> Signature {
    minhash(text, &d()).expect("a signature")
}

const ZH: &str = include_str!("../../../tests/data/long_zh.txt");
const EN: &str = include_str!("../../../tests/data/long_en.txt");

#[test]
fn no_tokens_no_signature() {
    for text in ["", " ", "，。！", "...", "\u{301}\u{200d}"] {
        assert_eq!(minhash(text, &d()), None, "{text:?}");
    }
    assert_eq!(
        minhash(
            "the of and",
            &MinHashOptions {
                stopwords: true,
                ..d()
            }
        ),
        None,
        "only stop words, dropped"
    );
    assert!(
        minhash("the of and", &d()).is_some(),
        "stop words are kept by default"
    );
}

#[test]
fn shingles_are_sized_by_the_token_they_end_at() {
    let tokens = |t: &str| reference_tokens(t, &d(), Chunking::default(), &mut || {}).unwrap();
    let shown = |t: &str| -> Vec<String> {
        let tokens = tokens(t);
        reference_shingles(&tokens, Shingle::Auto)
            .iter()
            .map(|s| s.join("|"))
            .collect()
    };
    // Chinese: character 3-shingles; English: word 2-shingles.
    assert_eq!(shown("新闻联播"), vec!["新|闻|联", "闻|联|播"]);
    assert_eq!(
        shown("The quick brown fox"),
        vec!["the|quick", "quick|brown", "brown|fox"]
    );
    // Mixed: each window by its last token; across the border the window joins both.
    assert_eq!(
        shown("北京地铁 line 19 开通"),
        vec![
            "北|京|地",
            "京|地|铁",
            "铁|line",
            "line|19",
            "line|19|开",
            "19|开|通"
        ]
    );
    // Fewer tokens than a window: one shingle of all of them.
    assert_eq!(shown("新闻"), vec!["新|闻"]);
    assert_eq!(shown("hello"), vec!["hello"]);
    assert_eq!(shown("新 hello"), vec!["新|hello"]);
    assert_eq!(shown("hello 新"), vec!["hello|新"]);
    // Fixed widths as SimHash's shingles: windows of n, or all tokens when fewer.
    let t = tokens("a b c");
    let w: Vec<usize> = reference_shingles(&t, Shingle::Fixed(2))
        .iter()
        .map(|s| s.len())
        .collect();
    assert_eq!(w, vec![2, 2]);
    assert_eq!(reference_shingles(&t, Shingle::Fixed(5)).len(), 1);
}

#[test]
fn normalization_and_folding_apply() {
    assert_eq!(sig("ＡＢＣ Def ghi"), sig("abc DEF ghi"));
    assert_eq!(
        sig("第十屆春茶節在龍井村開幕。"),
        sig("第十届春茶节在龙井村开幕。")
    );
    let unfolded = MinHashOptions {
        fold: Fold::None,
        ..d()
    };
    assert_ne!(
        minhash("第十屆春茶節在龍井村開幕。", &unfolded),
        minhash("第十届春茶节在龙井村开幕。", &unfolded)
    );
    // Punctuation and spacing are not tokens.
    assert_eq!(
        sig("北京地铁19号线今天开通，全长22公里。"),
        sig("北京地铁19号线今天开通！全长22公里")
    );
    assert_eq!(sig("Hello,   world!"), sig("hello world"));
}

#[test]
fn encode_decode_round_trip_and_refusals() {
    let s = sig("The quick brown fox jumps over the lazy dog");
    let bytes = s.encode();
    assert_eq!(bytes.len(), HEADER_BYTES + 4 * DEFAULT_K);
    assert_eq!(bytes[0], FORMAT_VERSION);
    assert_eq!(Signature::decode(&bytes), Ok(s.clone()));
    let malformed = |b: &[u8]| matches!(Signature::decode(b), Err(MinHashError::Malformed(_)));
    assert!(malformed(&[]));
    assert!(malformed(&bytes[..3]));
    assert!(malformed(&bytes[..4]), "a header without values");
    assert!(malformed(&bytes[..bytes.len() - 1]));
    let mut v2 = bytes.clone();
    v2[0] = 2;
    assert!(malformed(&v2));
    let mut huge = bytes[..4].to_vec();
    huge.extend(std::iter::repeat_n(0u8, 4 * (MAX_K as usize + 1)));
    assert!(malformed(&huge));
    assert!(Signature::decode(&huge[..4 + 4 * MAX_K as usize]).is_ok());
    let e = Signature::decode(&bytes[..5]).unwrap_err();
    assert!(e.to_string().contains("not a multiple of 4"), "{e}");
}

#[test]
fn similarity_estimates_jaccard_and_refuses_mismatches() {
    let a = sig(EN);
    assert_eq!(similarity(&a, &a), Ok(1.0));
    let small = minhash(EN, &MinHashOptions { k: 64, ..d() }).unwrap();
    assert!(matches!(similarity(&a, &small), Err(MinHashError::Mismatch(_))));
    let stop = minhash(
        EN,
        &MinHashOptions {
            stopwords: true,
            ..d()
        },
    )
    .unwrap();
    let e = similarity(&a, &stop).unwrap_err();
    assert!(e.to_string().contains("different options"), "{e}");
    assert_eq!(similarity_encoded(&a.encode(), &a.encode()), Ok(1.0));
    assert!(matches!(
        similarity_encoded(&a.encode(), &[1, 2]),
        Err(MinHashError::Malformed(_))
    ));
    // The estimate is near the exact Jaccard of the shingle sets: within 4 standard deviations of
    // a binomial of k draws, for pairs across the range.
    let half = &EN[..EN.len() / 2];
    let zh_edit = ZH.replacen("。", "，据报道。", 3);
    let cut = |t: &str, n: usize| t.chars().take(n).collect::<String>();
    let en_prefix = cut(EN, 1500);
    let zh_prefix = cut(ZH, 600);
    for (x, y) in [
        (EN, half),
        (ZH, zh_edit.as_str()),
        (ZH, ZH),
        (EN, ZH),
        (en_prefix.as_str(), EN),
        (zh_prefix.as_str(), ZH),
    ] {
        let j = exact_jaccard(x, y, &d());
        let est = similarity(&sig(x), &sig(y)).unwrap();
        let sd = (j * (1.0 - j) / DEFAULT_K as f64).sqrt().max(0.01);
        assert!((est - j).abs() <= 4.0 * sd, "exact {j}, estimate {est}");
    }
}

#[test]
fn band_keys_cut_the_signature() {
    let a = sig(ZH);
    let l = Lsh::default();
    let keys = band_keys(&a, &l).unwrap();
    assert_eq!(keys.len(), DEFAULT_BANDS);
    assert_eq!(band_keys_encoded(&a.encode(), &l).unwrap(), keys);
    // Equal rows in two bands give different keys: the band index is hashed in.
    let same = Signature::from_parts(a.tag(), vec![7; 128]);
    let k = band_keys(&same, &l).unwrap();
    assert_eq!(
        k.iter().collect::<std::collections::HashSet<_>>().len(),
        DEFAULT_BANDS
    );
    // A pair shares band i iff the rows of band i are equal.
    let mut v = a.values().to_vec();
    v[5] ^= 1; // band 1 of 4 rows
    let b = Signature::from_parts(a.tag(), v);
    let kb = band_keys(&b, &l).unwrap();
    let differ: Vec<usize> = (0..DEFAULT_BANDS).filter(|&i| keys[i] != kb[i]).collect();
    assert_eq!(differ, vec![1]);
    assert!(is_match(&a, &b, &l, 0.99).unwrap());
    assert!(!is_match(&a, &b, &l, 1.0).unwrap());
    // Bands that do not fit.
    for (bands, rows) in [(33, 4), (0, 4), (1, 0), (usize::MAX, 2)] {
        let e = band_keys(&a, &Lsh { bands, rows }).unwrap_err();
        assert!(matches!(e, MinHashError::Mismatch(_)), "{bands}x{rows}");
    }
    assert_eq!(band_keys(&a, &Lsh { bands: 128, rows: 1 }).unwrap().len(), 128);
}

#[test]
fn densify_fills_empty_bins_from_non_empty_ones() {
    assert_eq!(densify(&[None, None]), None);
    assert_eq!(densify(&[]), None);
    assert_eq!(densify(&[None, Some(5), None, None]), Some(vec![5; 4]));
    // Each empty bin: the first event (round, then non-empty bin in order) that targets it, by the
    // definition, one `scatter_target` at a time.
    let by_definition = |mins: &[Option<u32>], i: usize| -> u32 {
        let k = mins.len();
        for round in 0..MAX_ROUNDS {
            for (j, m) in mins.iter().enumerate() {
                if let Some(v) = m {
                    if scatter_target(j, round, k) == i {
                        return *v;
                    }
                }
            }
        }
        (1..k).find_map(|d| mins[(i + d) % k]).unwrap()
    };
    for (k, every) in [(64usize, 3usize), (128, 13), (128, 64), (32, 31)] {
        let mins: Vec<Option<u32>> = (0..k)
            .map(|i| (i % every == 0).then_some(i as u32 * 7 + 1))
            .collect();
        let dense = densify(&mins).unwrap();
        for (i, m) in mins.iter().enumerate() {
            match m {
                Some(v) => assert_eq!(dense[i], *v),
                None => assert_eq!(dense[i], by_definition(&mins, i), "k {k}, bin {i}"),
            }
        }
    }
    // The sweep: one bin of 1024 filled cannot reach every other within the rounds.
    let mut sparse = vec![None; 1024];
    sparse[700] = Some(9);
    assert_eq!(densify(&sparse), Some(vec![9; 1024]));
    // A pair with one shared non-empty bin and one differing: a densified bin agrees exactly when
    // the first event over the union of non-empty bins comes from the shared one (the coupling
    // that keeps the LSH property).
    let (mut x, mut y) = (vec![None; 32], vec![None; 32]);
    x[3] = Some(1);
    y[3] = Some(1);
    x[20] = Some(2);
    y[20] = Some(3);
    let (dx, dy) = (densify(&x).unwrap(), densify(&y).unwrap());
    let mut union = vec![None; 32];
    union[3] = Some(0);
    union[20] = Some(1);
    for i in 0..32 {
        let from_shared = i == 3 || (i != 20 && by_definition(&union, i) == 0);
        assert_eq!(dx[i] == dy[i], from_shared, "bin {i}");
    }
    // The reference, written event by event, gives the same values.
    for (k, every) in [
        (64usize, 3usize),
        (128, 13),
        (128, 64),
        (32, 31),
        (1024, 100),
        (1030, 7),
    ] {
        let mins: Vec<Option<u32>> = (0..k)
            .map(|i| (i % every == 0).then_some(i as u32 * 7 + 1))
            .collect();
        assert_eq!(densify(&mins), reference_densify(&mins), "k {k}, every {every}");
    }
    // One short text: few shingles spread over all bins.
    let s = sig("hello world");
    assert!(
        s.values().iter().all(|&v| v == s.values()[0]),
        "one shingle fills every bin"
    );
}

#[test]
fn huge_and_odd_inputs_never_fail() {
    // 1 MB of mixed text: the chunked fast path, no error, the same as in small chunks.
    let big = [ZH, EN].concat().repeat(40);
    let whole = minhash(&big, &d()).unwrap();
    let small = try_minhash_with(
        &big,
        &d(),
        Chunking {
            target: 1000,
            limit: 10_000,
        },
        &mut || {},
    )
    .unwrap()
    .unwrap();
    assert_eq!(whole, small);
    // Options built by hand out of range are clamped, not trusted.
    for o in [
        MinHashOptions { k: 0, ..d() },
        MinHashOptions { k: usize::MAX, ..d() },
        MinHashOptions {
            shingle: Shingle::Fixed(0),
            ..d()
        },
        MinHashOptions {
            shingle: Shingle::Fixed(10_000),
            tokenizer: Tokenizer::Char,
            ..d()
        },
    ] {
        let s = minhash("北京地铁 line 19 开通 and more words here", &o).unwrap();
        assert!((1..=MAX_K as usize).contains(&s.k()));
    }
    // The interrupt check runs between chunks.
    let mut calls = 0;
    let _ = try_minhash_with(
        &big,
        &d(),
        Chunking {
            target: 10_000,
            limit: 100_000,
        },
        &mut || calls += 1,
    );
    assert!(
        calls >= big.len() / 20_000,
        "{calls} calls for {} bytes",
        big.len()
    );
}

/// Golden vectors: the stored form of signatures and band keys of fixed texts. A change to any of
/// these breaks every stored signature; only a new format version may bring new values. Each case
/// pins a digest of the whole encoded signature (FNV-1a 64 and fmix64 of its bytes), its header
/// and first four values, and the first three band keys (defaults: 32 bands of 4 rows).
#[test]
fn golden_signatures() {
    let fox = "The quick brown fox jumps over the lazy dog, and the dog sleeps.";
    let zh = "我喜欢看电视，不喜欢看电影。";
    let mixed = "北京地铁19号线今天开通，line 19 opens today.";
    let tea = "第十屆春茶節在龍井村開幕。";
    let stop16 = MinHashOptions {
        stopwords: true,
        k: 16,
        ..d()
    };
    let bigram2 = MinHashOptions {
        tokenizer: Tokenizer::Bigram,
        shingle: Shingle::Fixed(2),
        ..d()
    };
    let cases: [(&str, MinHashOptions, Lsh); 6] = [
        (fox, d(), Lsh::default()),
        (zh, d(), Lsh::default()),
        (mixed, d(), Lsh::default()),
        (tea, d(), Lsh::default()),
        (fox, stop16, Lsh { bands: 4, rows: 4 }),
        (zh, bigram2, Lsh::default()),
    ];
    let want: [Golden; 6] = GOLDEN;
    let mut got = Vec::new();
    for (text, o, l) in &cases {
        let s = minhash(text, o).unwrap();
        let bytes = s.encode();
        let digest = fmix64(crate::hash::fnv1a64(&bytes));
        let header = [bytes[0], bytes[1], bytes[2], bytes[3]];
        let values = [s.values()[0], s.values()[1], s.values()[2], s.values()[3]];
        let keys = band_keys(&s, l).unwrap();
        got.push((digest, header, values, [keys[0], keys[1], keys[2]]));
    }
    if got != want {
        let shown: Vec<String> = got
            .iter()
            .map(|(d, h, v, k)| {
                format!(
                    "({d:#018x}, [{:#04x}, {:#04x}, {:#04x}, {:#04x}], [{:#010x}, {:#010x}, {:#010x}, {:#010x}], [{}, {}, {}]),",
                    h[0], h[1], h[2], h[3], v[0], v[1], v[2], v[3], k[0], k[1], k[2]
                )
            })
            .collect();
        panic!("golden signatures changed:\n{}", shown.join("\n"));
    }
    // The tea text folds to its simplified form: one signature.
    assert_eq!(minhash(tea, &d()), minhash("第十届春茶节在龙井村开幕。", &d()));
}

/// Digest of the encoded signature, its header, its first four values, its first three band keys.
type Golden = (u64, [u8; 4], [u32; 4], [i64; 3]);

#[rustfmt::skip]
const GOLDEN: [Golden; 6] = [
    (0xc516514a74abfda0, [0x01, 0x11, 0xdf, 0xb5], [0x4db1f1b2, 0x22dd8bd2, 0x22dd8bd2, 0x22dd8bd2], [-5387834645581189761, -975894113193155067, -1217001233237770089]),
    (0x639c345fd14b33a2, [0x01, 0x11, 0xdf, 0xb5], [0x745a884a, 0x90728f8f, 0x58d62c8c, 0xd5f7c07d], [-5053973368171301877, 7987430112162112619, -497429080795084212]),
    (0x3e01dc4052c75cf3, [0x01, 0x11, 0xdf, 0xb5], [0xbdbb714d, 0x1eab1f38, 0xc8a43b7f, 0x02ca7db7], [-3788598334393256823, -8113242525179444408, -4497952960480280607]),
    (0xe52eb04d3eecd0d9, [0x01, 0x11, 0xdf, 0xb5], [0xe3450574, 0x959a9e14, 0x0cc67c5e, 0xb4751ee3], [-78664533465112736, -7742913750390861887, 5675695500341097333]),
    (0xc1949937762ac809, [0x01, 0x38, 0x71, 0x94], [0x22dd8bd2, 0x171c8261, 0x757d7503, 0x4db1f1b2], [-8461497496654292551, -4058877460308160245, -3705291553171200016]),
    (0x4b419292b50d0835, [0x01, 0x5f, 0x1c, 0xa9], [0x3cee1883, 0x3cee1883, 0x42c1ad11, 0x42c1ad11], [8867935853072474293, -5290019978934325463, -481351441451412880]),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_text_and_any_options_never_panic(
        text in "\\PC{0,200}",
        tok in "[a-z]{0,6}",
        shingle in -3i32..70,
        stop: bool,
        fold in "[a-z]{0,10}",
        k in -5i32..1100,
        bands in -2i32..70,
        rows in -2i32..10,
    ) {
        if let Ok(o) = MinHashOptions::parse(&tok, shingle, stop, &fold, k) {
            if let Some(s) = minhash(&text, &o) {
                prop_assert_eq!(s.k(), o.k);
                prop_assert_eq!(Signature::decode(&s.encode()), Ok(s.clone()));
                prop_assert_eq!(similarity(&s, &s), Ok(1.0));
                if let Ok(l) = Lsh::parse(bands, rows, o.k) {
                    prop_assert_eq!(band_keys(&s, &l).map(|k| k.len()), Ok(l.bands));
                }
            }
        }
    }

    #[test]
    fn densify_equals_the_reference(
        k in 1usize..1100,
        filled in prop::collection::vec((any::<prop::sample::Index>(), any::<u32>()), 0..40),
    ) {
        // Sparse inputs (the cases that need the scatter and the sweep), any values.
        let mut mins = vec![None; k];
        for (i, v) in filled {
            mins[i.index(k)] = Some(v);
        }
        prop_assert_eq!(densify(&mins), reference_densify(&mins));
    }

    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(s) = Signature::decode(&bytes) {
            prop_assert_eq!(s.encode(), bytes);
        }
    }
}
