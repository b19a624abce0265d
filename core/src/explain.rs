//! Why two texts are or are not near-duplicates (`simhash_explain()`): the features of both sides
//! with their weights, matched by text, and for every bit on which the fingerprints differ, the
//! per-bit sums of both sides with the features that weighed most toward each side's value.
//!
//! Built only from [`try_features`] and the arithmetic of [`crate::accumulate`], so that the
//! fingerprints and the distance explained are those of `simhash()` with the same options (the tests
//! check this against [`crate::fingerprint`]).

use std::collections::HashMap;

use crate::error::OutOfMemory;
use crate::features::{try_features, Feature};
use crate::options::Options;

/// How many features a bit names for each side: the strongest ones pushing it toward that side's value.
pub const TOP_FEATURES_PER_BIT: usize = 3;

/// Where a feature occurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Shared,
    OnlyA,
    OnlyB,
}

impl Presence {
    /// The name used in SQL (`section` column).
    pub fn name(self) -> &'static str {
        match self {
            Presence::Shared => "shared",
            Presence::OnlyA => "only_a",
            Presence::OnlyB => "only_b",
        }
    }
}

/// A feature of either text, with its weight on each side where it occurs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedFeature {
    pub text: String,
    pub hash: u64,
    pub weight_a: Option<f64>,
    pub weight_b: Option<f64>,
}

impl ExplainedFeature {
    pub fn presence(&self) -> Presence {
        match (self.weight_a, self.weight_b) {
            (Some(_), Some(_)) => Presence::Shared,
            (Some(_), None) => Presence::OnlyA,
            _ => Presence::OnlyB,
        }
    }

    /// The larger of its weights: the order in which features are listed.
    fn strength(&self) -> f64 {
        self.weight_a
            .unwrap_or(f64::NEG_INFINITY)
            .max(self.weight_b.unwrap_or(f64::NEG_INFINITY))
    }
}

/// One bit on which the two fingerprints differ.
#[derive(Debug, Clone, PartialEq)]
pub struct BitExplanation {
    /// Bit position, 0 (least significant) to 63.
    pub bit: u32,
    /// The per-bit sum of docs/ARCHITECTURE.md §2.9 for this bit over a's features: the bit is 1 iff
    /// the sum is above 0.
    pub sum_a: f64,
    pub sum_b: f64,
    /// a's strongest features whose hash has this bit equal to a's bit, with their weights, strongest
    /// first (ties in order of first occurrence); at most [`TOP_FEATURES_PER_BIT`].
    pub top_a: Vec<(String, f64)>,
    pub top_b: Vec<(String, f64)>,
}

impl BitExplanation {
    pub fn value_a(&self) -> bool {
        self.sum_a > 0.0
    }

    pub fn value_b(&self) -> bool {
        self.sum_b > 0.0
    }
}

/// The explanation of a pair of texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// `simhash(a)`: `None` when a has no features.
    pub fingerprint_a: Option<u64>,
    pub fingerprint_b: Option<u64>,
    /// Features of both texts: shared ones first, then those only in a, then only in b; within each
    /// group the heaviest first (the larger of its two weights for a shared one), ties in order of
    /// first occurrence (in a, then in b).
    pub features: Vec<ExplainedFeature>,
    /// The differing bits, lowest first; empty when either side has no fingerprint.
    pub bits: Vec<BitExplanation>,
}

impl Explanation {
    /// `hamming(simhash(a), simhash(b))`, or `None` when either text has no features.
    pub fn distance(&self) -> Option<u32> {
        Some(crate::hamming(self.fingerprint_a?, self.fingerprint_b?))
    }

    /// The bits on which the fingerprints differ, as a mask (0 when either side has none).
    pub fn differing(&self) -> u64 {
        match (self.fingerprint_a, self.fingerprint_b) {
            (Some(a), Some(b)) => a ^ b,
            _ => 0,
        }
    }

    /// How many features are shared, only in a, only in b.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for f in &self.features {
            match f.presence() {
                Presence::Shared => c.0 += 1,
                Presence::OnlyA => c.1 += 1,
                Presence::OnlyB => c.2 += 1,
            }
        }
        c
    }

    /// One line for the summary row: the distance, the differing bits and the feature counts.
    pub fn summary(&self) -> String {
        let (shared, only_a, only_b) = self.counts();
        let features = format!("{shared} shared features, {only_a} only in a, {only_b} only in b");
        match (self.fingerprint_a, self.fingerprint_b) {
            (Some(a), Some(b)) => {
                let d = crate::hamming(a, b);
                let bits = if d == 0 {
                    "the fingerprints are equal".to_owned()
                } else {
                    format!("differing bits: {}", bit_list(a ^ b))
                };
                format!(
                    "distance {d} of 64 bits; simhash(a) = {}, simhash(b) = {}; {bits}; {features}",
                    a as i64, b as i64
                )
            }
            (a, b) => {
                let none: Vec<&str> = [("a", a), ("b", b)]
                    .into_iter()
                    .filter(|(_, fp)| fp.is_none())
                    .map(|(side, _)| side)
                    .collect();
                format!(
                    "no distance: {} no features, so no fingerprint (simhash() is NULL); {features}",
                    match none.as_slice() {
                        [one] => format!("{one} has"),
                        _ => "a and b have".to_owned(),
                    }
                )
            }
        }
    }

    /// How a feature votes on the differing bits: `None` when no bit differs.
    pub fn feature_detail(&self, feature: &ExplainedFeature) -> Option<String> {
        let diff = self.differing();
        if diff == 0 {
            return None;
        }
        let ones = feature.hash & diff;
        let zeros = !feature.hash & diff;
        let mut parts = Vec::new();
        if ones != 0 {
            parts.push(format!("toward 1 on bits {}", bit_list(ones)));
        }
        if zeros != 0 {
            parts.push(format!("toward 0 on bits {}", bit_list(zeros)));
        }
        Some(parts.join("; "))
    }

    /// One line for a bit row: each side's value and sum, and its strongest features.
    pub fn bit_detail(&self, bit: &BitExplanation) -> String {
        let side = |name: &str, value: bool, sum: f64, top: &[(String, f64)]| {
            let named: Vec<String> = top
                .iter()
                .map(|(t, w)| format!("{} ({})", quote(t), number(*w)))
                .collect();
            let by = if named.is_empty() {
                "no feature".to_owned()
            } else {
                named.join(", ")
            };
            format!("{name} = {} (sum {}) by {by}", u8::from(value), number(sum))
        };
        format!(
            "{}; {}",
            side("a", bit.value_a(), bit.sum_a, &bit.top_a),
            side("b", bit.value_b(), bit.sum_b, &bit.top_b)
        )
    }
}

/// Bit positions of a mask, lowest first, comma-separated.
fn bit_list(mask: u64) -> String {
    (0..64)
        .filter(|i| (mask >> i) & 1 == 1)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A weight or sum for a person: at most 3 decimals, no trailing zeros.
fn number(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// A feature's text in double quotes, so that spaces inside shingles stay visible.
fn quote(text: &str) -> String {
    format!("\"{text}\"")
}

/// Per-bit sums of docs/ARCHITECTURE.md §2.9 (`v[i] ± w` in the order given), as
/// [`crate::accumulate`] forms them.
fn sums(features: &[Feature]) -> [f64; 64] {
    let mut v = [0f64; 64];
    for f in features {
        for (i, vi) in v.iter_mut().enumerate() {
            if (f.hash >> i) & 1 == 1 {
                *vi += f.weight;
            } else {
                *vi -= f.weight;
            }
        }
    }
    v
}

fn fingerprint_of(features: &[Feature], v: &[f64; 64]) -> Option<u64> {
    (!features.is_empty()).then(|| (0..64).fold(0u64, |fp, i| fp | (u64::from(v[i] > 0.0) << i)))
}

/// The features of `features` whose hash has `bit` equal to `value`, heaviest first, at most
/// [`TOP_FEATURES_PER_BIT`]; ties keep the order of first occurrence. One pass, no sort: a long text
/// has many features and this runs once per differing bit.
fn strongest(features: &[Feature], bit: u32, value: bool) -> Vec<(String, f64)> {
    let mut top: Vec<&Feature> = Vec::with_capacity(TOP_FEATURES_PER_BIT + 1);
    for f in features.iter().filter(|f| ((f.hash >> bit) & 1 == 1) == value) {
        // After every feature at least as heavy: earlier ones win ties.
        let at = top.iter().position(|t| f.weight > t.weight).unwrap_or(top.len());
        if at < TOP_FEATURES_PER_BIT {
            top.insert(at, f);
            top.truncate(TOP_FEATURES_PER_BIT);
        }
    }
    top.into_iter().map(|f| (f.text.clone(), f.weight)).collect()
}

/// Explains the pair `a`, `b` under `options`. Reports an allocation failure of either text's
/// features as [`try_features`] does; `interrupt` runs between chunks of each text.
pub fn explain(
    a: &str,
    b: &str,
    options: &Options,
    interrupt: &mut dyn FnMut(),
) -> Result<Explanation, OutOfMemory> {
    let fa = try_features(a, options, interrupt)?;
    let fb = try_features(b, options, interrupt)?;
    let (va, vb) = (sums(&fa), sums(&fb));
    let fingerprint_a = fingerprint_of(&fa, &va);
    let fingerprint_b = fingerprint_of(&fb, &vb);

    // Features are distinct by text within a side (try_features tells hash collisions apart).
    let in_b: HashMap<&str, usize> = fb.iter().enumerate().map(|(i, f)| (f.text.as_str(), i)).collect();
    let mut matched_b = vec![false; fb.len()];
    let mut shared = Vec::new();
    let mut only_a = Vec::new();
    for f in &fa {
        let weight_b = in_b.get(f.text.as_str()).map(|&i| {
            matched_b[i] = true;
            fb[i].weight
        });
        let e = ExplainedFeature {
            text: f.text.clone(),
            hash: f.hash,
            weight_a: Some(f.weight),
            weight_b,
        };
        if weight_b.is_some() {
            shared.push(e);
        } else {
            only_a.push(e);
        }
    }
    let mut only_b: Vec<ExplainedFeature> = fb
        .iter()
        .zip(&matched_b)
        .filter(|(_, &m)| !m)
        .map(|(f, _)| ExplainedFeature {
            text: f.text.clone(),
            hash: f.hash,
            weight_a: None,
            weight_b: Some(f.weight),
        })
        .collect();
    for group in [&mut shared, &mut only_a, &mut only_b] {
        group.sort_by(|x, y| y.strength().total_cmp(&x.strength()));
    }
    let mut features = shared;
    features.append(&mut only_a);
    features.append(&mut only_b);

    let bits = match (fingerprint_a, fingerprint_b) {
        (Some(x), Some(y)) => (0..64u32)
            .filter(|&i| ((x ^ y) >> i) & 1 == 1)
            .map(|i| BitExplanation {
                bit: i,
                sum_a: va[i as usize],
                sum_b: vb[i as usize],
                top_a: strongest(&fa, i, va[i as usize] > 0.0),
                top_b: strongest(&fb, i, vb[i as usize] > 0.0),
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Explanation {
        fingerprint_a,
        fingerprint_b,
        features,
        bits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Fold, Tokenizer, Weighting};
    use crate::{fingerprint, hamming};
    use proptest::prelude::*;

    fn opts(spec: &str) -> Options {
        let p: Vec<&str> = spec.split(':').collect();
        Options::parse_with_fold(p[0], p[1].parse().unwrap(), p[2], p[3] == "true", p[4]).unwrap()
    }

    fn run(a: &str, b: &str, o: &Options) -> Explanation {
        explain(a, b, o, &mut || {}).unwrap()
    }

    const NEWS_A: &str = "北京地铁19号线今天开通，全长22公里，设10座车站。";
    const NEWS_B: &str = "北京地铁19号线今日开通，全长22公里，共设10座车站。";
    const FOX_A: &str = "The quick brown fox jumps over the lazy dog; the fox!";
    const FOX_B: &str = "The quick brown fox leaps over the sleepy dog; the fox!";

    #[test]
    fn distance_is_the_hamming_distance_of_simhash() {
        for o in [
            Options::default(),
            opts("word:1:tf:false:none"),
            opts("jieba:1:tfidf:true:none"),
            opts("char:3:binary:false:none"),
            opts("word:2:logtf:false:none"),
        ] {
            for (a, b) in [(NEWS_A, NEWS_B), (FOX_A, FOX_B), (NEWS_A, FOX_A), (FOX_A, FOX_A)] {
                let e = run(a, b, &o);
                let (fa, fb) = (fingerprint(a, &o), fingerprint(b, &o));
                assert_eq!((e.fingerprint_a, e.fingerprint_b), (fa, fb), "{a} {b} {o:?}");
                assert_eq!(e.distance(), Some(hamming(fa.unwrap(), fb.unwrap())));
                assert_eq!(e.bits.len() as u32, e.distance().unwrap());
            }
        }
    }

    #[test]
    fn features_are_split_into_shared_and_one_sided() {
        let o = opts("word:1:tf:true:none");
        let e = run(FOX_A, FOX_B, &o);
        let names = |p: Presence| -> Vec<&str> {
            e.features
                .iter()
                .filter(|f| f.presence() == p)
                .map(|f| f.text.as_str())
                .collect()
        };
        // "fox" twice on both sides weighs 2 and comes first; the rest in order of first occurrence.
        assert_eq!(names(Presence::Shared), vec!["fox", "quick", "brown", "dog"]);
        assert_eq!(names(Presence::OnlyA), vec!["jumps", "lazy"]);
        assert_eq!(names(Presence::OnlyB), vec!["leaps", "sleepy"]);
        let fox = &e.features[0];
        assert_eq!((fox.weight_a, fox.weight_b), (Some(2.0), Some(2.0)));
        assert_eq!(e.counts(), (4, 2, 2));
    }

    #[test]
    fn shared_weights_may_differ() {
        let o = opts("word:1:logtf:false:none");
        let e = run("rain rain rain today", "rain today", &o);
        let rain = e.features.iter().find(|f| f.text == "rain").unwrap();
        assert_eq!(rain.weight_a, Some(1.0 + 3f64.ln()));
        assert_eq!(rain.weight_b, Some(1.0));
        assert_eq!(rain.presence(), Presence::Shared);
    }

    #[test]
    fn bit_rows_name_the_features_that_decided_them() {
        let o = Options::default();
        let e = run(NEWS_A, FOX_A, &o);
        assert!(e.distance().unwrap() > 10);
        let fa = crate::features(NEWS_A, &o, &mut || {});
        for b in &e.bits {
            assert_ne!(b.value_a(), b.value_b(), "only differing bits are listed");
            assert_eq!(
                b.value_a(),
                (e.fingerprint_a.unwrap() >> b.bit) & 1 == 1,
                "the sum's sign is the bit"
            );
            assert!(!b.top_a.is_empty() && b.top_a.len() <= TOP_FEATURES_PER_BIT);
            // The definition: a stable sort of the features with a's bit, heaviest first.
            let mut pushing: Vec<&Feature> = fa
                .iter()
                .filter(|f| ((f.hash >> b.bit) & 1 == 1) == b.value_a())
                .collect();
            pushing.sort_by(|x, y| y.weight.total_cmp(&x.weight));
            let want: Vec<(String, f64)> = pushing
                .iter()
                .take(TOP_FEATURES_PER_BIT)
                .map(|f| (f.text.clone(), f.weight))
                .collect();
            assert_eq!(b.top_a, want, "bit {}", b.bit);
            // Each named feature has the bit of its side's value, and none left out weighs more.
            let weakest = b.top_a.last().unwrap().1;
            for (text, w) in &b.top_a {
                let f = fa.iter().find(|f| &f.text == text).unwrap();
                assert_eq!((f.hash >> b.bit) & 1 == 1, b.value_a());
                assert_eq!(f.weight, *w);
            }
            let named: Vec<&str> = b.top_a.iter().map(|(t, _)| t.as_str()).collect();
            assert!(fa
                .iter()
                .filter(|f| ((f.hash >> b.bit) & 1 == 1) == b.value_a())
                .filter(|f| !named.contains(&f.text.as_str()))
                .all(|f| f.weight <= weakest));
        }
        let bits: Vec<u32> = e.bits.iter().map(|b| b.bit).collect();
        let mut sorted = bits.clone();
        sorted.sort();
        assert_eq!(bits, sorted);
    }

    #[test]
    fn identical_texts_differ_on_no_bit() {
        let e = run(NEWS_A, NEWS_A, &Options::default());
        assert_eq!(e.distance(), Some(0));
        assert!(e.bits.is_empty());
        assert!(e.features.iter().all(|f| f.presence() == Presence::Shared));
        assert!(
            e.summary().contains("the fingerprints are equal"),
            "{}",
            e.summary()
        );
        assert_eq!(e.feature_detail(&e.features[0]), None);
    }

    #[test]
    fn a_text_without_features_has_no_distance() {
        let o = Options::default();
        let e = run("，。！", FOX_A, &o);
        assert_eq!((e.fingerprint_a, e.distance()), (None, None));
        assert!(e.bits.is_empty());
        assert!(e.features.iter().all(|f| f.presence() == Presence::OnlyB));
        assert!(
            e.summary().starts_with("no distance: a has no features"),
            "{}",
            e.summary()
        );
        let both = run("", "the of", &o);
        assert!(
            both.summary().contains("a and b have no features"),
            "{}",
            both.summary()
        );
        assert!(both.features.is_empty());
    }

    #[test]
    fn details_read_as_sentences() {
        let o = opts("word:1:tf:true:none");
        let e = run(FOX_A, FOX_B, &o);
        let s = e.summary();
        assert!(
            s.starts_with(&format!(
                "distance {} of 64 bits; simhash(a) = ",
                e.distance().unwrap()
            )),
            "{s}"
        );
        assert!(s.ends_with("4 shared features, 2 only in a, 2 only in b"), "{s}");
        let b = &e.bits[0];
        let d = e.bit_detail(b);
        assert!(
            d.starts_with(&format!("a = {} (sum ", u8::from(b.value_a()))),
            "{d}"
        );
        assert!(
            d.contains(&format!("; b = {} (sum ", u8::from(b.value_b()))),
            "{d}"
        );
        let jumps = e.features.iter().find(|f| f.text == "jumps").unwrap();
        let fd = e.feature_detail(jumps).unwrap();
        assert!(fd.starts_with("toward "), "{fd}");
        let mut listed: Vec<u32> = Vec::new();
        for part in fd.split("; ") {
            let (toward, bits) = part.split_once(" on bits ").unwrap();
            for bit in bits.split(", ").map(|b| b.parse::<u32>().unwrap()) {
                assert_eq!(toward == "toward 1", (jumps.hash >> bit) & 1 == 1, "{fd}");
                listed.push(bit);
            }
        }
        listed.sort();
        let differing: Vec<u32> = e.bits.iter().map(|b| b.bit).collect();
        assert_eq!(listed, differing, "every differing bit once: {fd}");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(1.6931471805599454), "1.693");
        assert_eq!(number(-0.0001), "0");
        assert_eq!(number(-2.5), "-2.5");
    }

    #[test]
    fn traditional_and_simplified_share_features_when_folded() {
        let e = run(
            "第十屆春茶節在龍井村開幕。",
            "第十届春茶节在龙井村开幕。",
            &Options::default(),
        );
        assert_eq!(e.distance(), Some(0));
        let none = Options {
            fold: Fold::None,
            tokenizer: Tokenizer::Word,
            weighting: Weighting::Tf,
            ..Options::default()
        };
        // Unfolded, 'word' gives one feature per Han character: 屆節龍開 against 届节龙开.
        let e = run("第十屆春茶節在龍井村開幕。", "第十届春茶节在龙井村开幕。", &none);
        assert_eq!(e.counts(), (7, 4, 4));
        assert!(e.distance().unwrap() > 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn explained_distance_equals_simhash_distance(
            a in "[ a-zA-Z0-9。、！？，.\n中文天气新闻我们的是了]{0,80}",
            b in "[ a-zA-Z0-9。、！？，.\n中文天气新闻我们的是了]{0,80}",
        ) {
            for spec in ["bigram:1:logtf:true:auto", "word:1:tf:false:none", "char:2:binary:false:none",
                         "jieba:1:tfidf:true:none", "word:1:logtfidf:true:simplified", "char:3:logtf:false:none"] {
                let o = opts(spec);
                let e = run(&a, &b, &o);
                let (fa, fb) = (fingerprint(&a, &o), fingerprint(&b, &o));
                prop_assert_eq!((e.fingerprint_a, e.fingerprint_b), (fa, fb), "{}", spec);
                let want = fa.zip(fb).map(|(x, y)| hamming(x, y));
                prop_assert_eq!(e.distance(), want);
                prop_assert_eq!(e.bits.len() as u32, want.unwrap_or(0));
                let (shared, only_a, only_b) = e.counts();
                prop_assert_eq!(shared + only_a, crate::features(&a, &o, &mut || {}).len());
                prop_assert_eq!(shared + only_b, crate::features(&b, &o, &mut || {}).len());
            }
        }
    }
}
