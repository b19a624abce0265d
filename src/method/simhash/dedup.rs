//! SimHash's dedup (docs/ARCHITECTURE.md §9): the rows grouped by identical fingerprint, the pairs
//! of groups within `max_distance` (`simhash_core::pairs`), expanded back to rows.

use std::rc::Rc;

use simhash_core::pairs::{cluster_rows, group_identical, near_pairs, Progress};

use crate::attachment::SimHashSettings;
use crate::progress::Reporter;

/// The fingerprints of a table's rows, in key order (None: no fingerprint), and the search's limits.
pub struct Fingerprints {
    fps: Vec<Option<u64>>,
    nbands: u32,
    max_distance: u32,
}

/// The rows that have a fingerprint, grouped by identical fingerprint: `rows_of_group[g]` lists the
/// row indexes (in key order) whose fingerprint is `distinct[g]`.
struct Groups {
    rows_of_group: Vec<Vec<u32>>,
    distinct: Vec<u64>,
}

impl Fingerprints {
    /// No rows yet, for a search within `max_distance` over the attachment's bands.
    pub fn new(sim: &SimHashSettings, max_distance: u32) -> Fingerprints {
        Fingerprints {
            fps: Vec::new(),
            nbands: sim.nbands as u32,
            max_distance,
        }
    }

    /// The next row's stored fingerprint.
    pub fn push(&mut self, fp: Option<i64>) {
        self.fps.push(fp.map(|fp| fp as u64));
    }

    fn groups(&self) -> Groups {
        let with_fp: Vec<u32> = (0..self.fps.len() as u32)
            .filter(|&i| self.fps[i as usize].is_some())
            .collect();
        let fps: Vec<u64> = with_fp
            .iter()
            .map(|&i| self.fps[i as usize].unwrap_or(0))
            .collect();
        let groups = group_identical(&fps);
        Groups {
            rows_of_group: groups.members(&with_fp),
            distinct: groups.distinct,
        }
    }

    /// A progress callback for the pair search that reports through `reporter`.
    fn progress<'a>(&'a self, groups: &'a Groups, reporter: &'a mut Reporter) -> impl FnMut(&Progress) + 'a {
        move |p: &Progress| {
            reporter.report(|| {
                format!(
                    "{} rows, {} distinct fingerprints: band {} of {} done, {} fingerprint pairs within distance {}",
                    self.fps.len(),
                    groups.distinct.len(),
                    p.parts_done,
                    p.parts,
                    p.pairs,
                    self.max_distance
                )
            })
        }
    }

    /// Every pair of rows within `max_distance` (row indexes, the first in key order) with its
    /// distance: identical fingerprints first, group by group, then the pairs of groups. Expanded
    /// lazily: a group of many identical rows yields its pairs one by one.
    pub fn pairs(self, reporter: &mut Reporter) -> impl Iterator<Item = (u32, u32, u32)> {
        let groups = self.groups();
        let pairs = if self.max_distance == 0 {
            Vec::new()
        } else {
            near_pairs(
                &groups.distinct,
                self.max_distance,
                self.nbands,
                &mut self.progress(&groups, reporter),
            )
        };
        let groups = Rc::new(groups.rows_of_group);
        let g = groups.clone();
        let identical = (0..groups.len()).flat_map(move |grp| {
            let g = g.clone();
            let n = g[grp].len();
            (0..n).flat_map(move |x| {
                let g = g.clone();
                (x + 1..n).map(move |y| (g[grp][x], g[grp][y], 0))
            })
        });
        let near = pairs.into_iter().flat_map(move |(ga, gb, d)| {
            let g = groups.clone();
            let (ga, gb) = (ga as usize, gb as usize);
            (0..g[ga].len()).flat_map(move |x| {
                let g = g.clone();
                (0..g[gb].len()).map(move |y| {
                    let (a, b) = (g[ga][x], g[gb][y]);
                    (a.min(b), a.max(b), d)
                })
            })
        });
        identical.chain(near)
    }

    /// The candidates of a verified dedup (`crate::dedup::verify`): the rows of each group of
    /// identical fingerprints (all within distance 0 of each other), and the pairs of groups within
    /// `max_distance`, with their distance.
    #[allow(clippy::type_complexity)]
    pub fn candidates(self, reporter: &mut Reporter) -> (Vec<Vec<u32>>, Vec<(u32, u32, u32)>) {
        let groups = self.groups();
        let pairs = if self.max_distance == 0 {
            Vec::new()
        } else {
            near_pairs(
                &groups.distinct,
                self.max_distance,
                self.nbands,
                &mut self.progress(&groups, reporter),
            )
        };
        (groups.rows_of_group, pairs)
    }

    /// The representative of every row's cluster (rows without a fingerprint are their own).
    pub fn clusters(self, reporter: &mut Reporter) -> Vec<u32> {
        let groups = self.groups();
        let mut tick = self.progress(&groups, reporter);
        cluster_rows(
            self.fps.len(),
            &groups.rows_of_group,
            &groups.distinct,
            self.max_distance,
            self.nbands,
            &mut tick,
        )
    }
}
