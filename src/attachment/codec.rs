//! The one encoder and the one decoder of an attachment: its trigger's arguments.

use pgrx::prelude::*;

use super::settings::{
    valid_threshold, Attachment, Method, MinHashSettings, Mode, OptionNames, SimHashSettings, METHODS, NBANDS,
};
use crate::catalog::cstr_utf8;

/// The last argument of an attachment that verifies its candidates (since 0.11.0).
const VERIFY: &str = "verify";

/// The largest `max_distance` a trigger's arguments may hold: 0.1.0 and 0.2.0 attached up to 63.
const STORED_MAX_DISTANCE: i32 = 63;

impl Attachment {
    /// The trigger arguments that record this attachment (what [`Attachment::from_args`] reads).
    /// A MinHash attachment records SimHash's band count and `max_distance` 0 in their places.
    pub fn to_args(&self) -> Vec<String> {
        let o = &self.option_names;
        let (nbands, max_distance) = self.simhash().map_or((NBANDS, 0), |s| (s.nbands, s.max_distance));
        let mut args = vec![
            self.text_column.clone(),
            nbands.to_string(),
            max_distance.to_string(),
            self.mode.name().to_string(),
            o.tokenizer.clone(),
            o.shingle.to_string(),
            o.weighting.clone(),
            o.stopwords.to_string(),
            o.fold.clone(),
        ];
        // Trailing arguments only as far as they are needed: scope ('' for none), 'registry' (or
        // ''), min_length; so an attachment without them has the arguments of 0.3.0.
        let scope = self.scope_column.clone().unwrap_or_default();
        let registry = if self.registry { "registry" } else { "" };
        if self.verify {
            // Since 0.11.0: the method (SimHash's too), its threshold, and 'verify'.
            let method = self
                .minhash()
                .map_or_else(|| METHODS[0].to_string(), |m| m.method_arg());
            args.extend([
                scope,
                registry.into(),
                self.min_length.to_string(),
                method,
                self.method.threshold().to_string(),
                VERIFY.into(),
            ]);
        } else if let Some(m) = self.minhash() {
            args.extend([
                scope,
                registry.into(),
                self.min_length.to_string(),
                m.method_arg(),
            ]);
            args.push(m.threshold.to_string());
        } else if self.min_length > 0 {
            args.extend([scope, registry.into(), self.min_length.to_string()]);
        } else if self.registry {
            args.extend([scope, registry.into()]);
        } else if self.scope_column.is_some() {
            args.push(scope);
        }
        args
    }

    /// The attachment a trigger's arguments record, or None when they are not a simhash_trigger()'s.
    pub fn from_args(args: &[String]) -> Option<Attachment> {
        let [text_column, nbands, max_distance, mode, tokenizer, shingle, weighting, stopwords, rest @ ..] =
            args
        else {
            return None;
        };
        let registry_arg = |r: &str| r == "registry" || r.is_empty();
        let (fold, scope, registry, min_length, method, verify) = match rest {
            [] => ("auto", "", false, "0", None, false),
            [f] => (f.as_str(), "", false, "0", None, false),
            [f, sc] => (f.as_str(), sc.as_str(), false, "0", None, false),
            [f, sc, r] if r == "registry" => (f.as_str(), sc.as_str(), true, "0", None, false),
            [f, sc, r, n] if registry_arg(r) => {
                (f.as_str(), sc.as_str(), !r.is_empty(), n.as_str(), None, false)
            }
            [f, sc, r, n, m, t] if r.is_empty() => {
                (f.as_str(), sc.as_str(), false, n.as_str(), Some((m, t)), false)
            }
            [f, sc, r, n, m, t, v] if registry_arg(r) && v == VERIFY => (
                f.as_str(),
                sc.as_str(),
                !r.is_empty(),
                n.as_str(),
                Some((m, t)),
                true,
            ),
            _ => return None,
        };
        let option_names = OptionNames {
            tokenizer: tokenizer.clone(),
            shingle: shingle.parse().ok()?,
            weighting: weighting.clone(),
            stopwords: stopwords == "true",
            fold: fold.to_string(),
        };
        // Both methods' arguments hold a valid band count and max_distance (MinHash: 4 and 0).
        let nbands = nbands.parse().ok().filter(|n| (3..=64).contains(n))?;
        let max_distance = max_distance
            .parse()
            .ok()
            .filter(|k| (0..=STORED_MAX_DISTANCE).contains(k))?;
        let simhash = |threshold: f64| -> Option<Method> {
            Some(Method::SimHash(SimHashSettings {
                nbands,
                max_distance,
                options: option_names.parse().ok()?,
                threshold,
            }))
        };
        let method = match method {
            None => simhash(simhash_core::verify::DEFAULT_SIMHASH_THRESHOLD)?,
            Some((m, t)) if m == METHODS[0] => simhash(valid_threshold(t.parse().ok()?).ok()?)?,
            Some((m, t)) => Method::MinHash(MinHashSettings::from_arg(m, &option_names, t)?),
        };
        Some(Attachment {
            text_column: text_column.clone(),
            mode: Mode::parse(mode)?,
            option_names,
            scope_column: (!scope.is_empty()).then(|| scope.to_string()),
            registry,
            min_length: min_length.parse().ok().filter(|n| *n >= 0)?,
            method,
            verify,
        })
    }

    /// The attachment `trigger` records, if its arguments are a simhash_trigger()'s.
    ///
    /// # Safety
    /// `trigger` must come from a relation's trigger descriptor.
    pub unsafe fn from_trigger(trigger: &pg_sys::Trigger) -> Option<Attachment> {
        let args: Vec<String> = (0..trigger.tgnargs as usize)
            .map(|i| cstr_utf8(*trigger.tgargs.add(i)))
            .collect();
        Attachment::from_args(&args)
    }
}
