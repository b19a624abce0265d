//! Term counting on the fast path: the frequency of every distinct feature hash, in order of first
//! occurrence, in an open-addressing table that a thread reuses from one text to the next.

use crate::error::{memory_low, OutOfMemory};

/// The term frequency of every distinct feature hash, and the order in which they first came: an
/// open-addressing table (linear probing from the hash's top bits; feature hashes are mixed by
/// fmix64) that finds or inserts a feature in one probe sequence, and the list of the slots in
/// order of first occurrence. The slot key 0 marks an empty slot, so the hash 0 is kept apart.
pub(super) struct TermCounts {
    /// Key and count side by side: a probe reads one cache line.
    slots: Vec<Slot>,
    /// The slot of every distinct feature (but the hash 0), in order of first occurrence.
    order: Vec<u32>,
    shift: u32,
    /// The count of the hash 0, and how many distinct features came before it.
    zero: Option<(u32, usize)>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    key: u64,
    count: u32,
}

thread_local! {
    static SPARE_COUNTS: std::cell::Cell<Option<TermCounts>> = const { std::cell::Cell::new(None) };
}

impl TermCounts {
    /// A table sized for a text of `bytes` bytes (fewer distinct features than a quarter of its
    /// bytes, as a rule), bounded: a longer text grows it.
    pub(super) fn new(bytes: usize) -> Self {
        let slots = (bytes / 2).clamp(64, 1 << 15).next_power_of_two();
        TermCounts {
            slots: Vec::new(),
            order: Vec::new(),
            shift: 64 - slots.trailing_zeros(),
            zero: None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.order.len() + usize::from(self.zero.is_some())
    }

    /// The table this thread used last, emptied, if it kept one; else a new one for `bytes`.
    /// Emptying clears only the slots used, so a short text does not pay for zeroing a table.
    pub(super) fn take(bytes: usize) -> Self {
        let fresh = TermCounts::new(bytes);
        match SPARE_COUNTS.with(|spare| spare.take()) {
            // A table far larger than this text needs spreads its few features over more cache
            // lines than a new one would.
            Some(spare) if spare.shift + 2 >= fresh.shift => spare,
            _ => fresh,
        }
    }

    /// Empties the table and keeps it for the next [`TermCounts::take`] of this thread, unless it
    /// grew large: a long text's table is freed, so a backend keeps at most 256 KiB of it between
    /// calls.
    pub(super) fn give_back(mut self) {
        if self.slots.len() > 1 << 14 {
            return;
        }
        for &slot in &self.order {
            self.slots[slot as usize].key = 0;
        }
        self.order.clear();
        self.zero = None;
        SPARE_COUNTS.with(|spare| spare.set(Some(self)));
    }

    #[inline(always)]
    pub(super) fn add(&mut self, h: u64) -> Result<(), OutOfMemory> {
        if h == 0 {
            let before = self.order.len();
            let (n, _) = self.zero.get_or_insert((0, before));
            *n = n.saturating_add(1);
            return Ok(());
        }
        if 2 * (self.order.len() + 1) > self.slots.len() {
            self.grow()?;
        }
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let slot = &mut self.slots[i];
            if slot.key == h {
                slot.count = slot.count.saturating_add(1);
                return Ok(());
            }
            if slot.key == 0 {
                *slot = Slot { key: h, count: 1 };
                self.order.push(i as u32);
                return Ok(());
            }
            i = (i + 1) & mask;
        }
    }

    /// The first allocation, or twice the slots, every feature moved over in order.
    #[cold]
    fn grow(&mut self) -> Result<(), OutOfMemory> {
        let features = self.order.len();
        if memory_low() {
            return Err(OutOfMemory { features });
        }
        let size = if self.slots.is_empty() {
            1usize << (64 - self.shift)
        } else {
            2 * self.slots.len()
        };
        let oom = |_| OutOfMemory { features };
        let mut slots = Vec::new();
        slots.try_reserve_exact(size).map_err(oom)?;
        // Room for the features a table of this size holds before it grows again.
        self.order
            .try_reserve_exact((size / 2).saturating_sub(features))
            .map_err(oom)?;
        slots.resize(size, Slot::default());
        let shift = 64 - size.trailing_zeros();
        let mask = size - 1;
        for at in self.order.iter_mut() {
            let old = self.slots[*at as usize];
            let mut i = (old.key >> shift) as usize;
            while slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = old;
            *at = i as u32;
        }
        self.slots = slots;
        self.shift = shift;
        Ok(())
    }

    /// Every distinct feature with its count, in order of first occurrence.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let listed = self.order.iter().map(|&i| {
            let slot = self.slots[i as usize];
            (slot.key, slot.count)
        });
        let (zero, before) = match self.zero {
            Some((n, before)) => (Some((0, n)), before),
            None => (None, self.order.len()),
        };
        listed.clone().take(before).chain(zero).chain(listed.skip(before))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::fmix64;

    #[test]
    fn term_counts_count_in_order_of_first_occurrence() {
        let mut x = 7u64;
        let mut next = || {
            x = fmix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15));
            x
        };
        for round in 0..200 {
            // Few distinct values (many repeats), the hash 0 among them, tables that must grow;
            // every other round reuses the thread's table.
            let distinct: Vec<u64> = (0..1 + round * 7)
                .map(|k| if k == 3 { 0 } else { next() })
                .collect();
            let stream: Vec<u64> = (0..(round * 13) % 3000 + 1)
                .map(|_| distinct[(next() % distinct.len() as u64) as usize])
                .collect();
            let mut counts = if round % 2 == 0 {
                TermCounts::take(round)
            } else {
                TermCounts::new(round)
            };
            for &h in &stream {
                counts.add(h).unwrap();
            }
            let mut want: Vec<(u64, u32)> = Vec::new();
            for &h in &stream {
                match want.iter_mut().find(|(k, _)| *k == h) {
                    Some((_, n)) => *n += 1,
                    None => want.push((h, 1)),
                }
            }
            assert_eq!(counts.iter().collect::<Vec<_>>(), want, "round {round}");
            assert_eq!(counts.len(), want.len());
            counts.give_back();
        }
        // A table given back comes back empty.
        let counts = TermCounts::take(10);
        assert_eq!(counts.len(), 0);
        assert!(counts.slots.iter().all(|s| s.key == 0));
    }
}
