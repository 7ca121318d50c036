//! [`Table`]: a DFA as byte classes, a dense transition table and final
//! flags, the plain automaton every construction of this folder builds
//! (from an expression, a set of strings, a number range, an intersection)
//! and [`LexemeDfa`](super::LexemeDfa) is made of. It imports no sibling:
//! the constructions sit above it.

use super::DEAD;

/// A DFA under construction: byte classes, a dense transition table and
/// final flags. State 0 is the start; [`DEAD`] is the absent state.
#[derive(Clone, Debug)]
pub struct Table {
    pub classes: [u8; 256],
    pub num_classes: usize,
    pub trans: Vec<u32>,
    pub is_final: Vec<bool>,
}

impl Table {
    pub fn num_states(&self) -> usize {
        self.is_final.len()
    }

    #[inline]
    pub fn next(&self, s: u32, b: u8) -> u32 {
        self.trans[s as usize * self.num_classes + self.classes[b as usize] as usize]
    }

    /// Every string of 1 to `max_len` bytes of `alphabet`, shortest
    /// first (texts for tests to check a table with).
    #[cfg(test)]
    pub fn strings_over(alphabet: &[u8], max_len: usize) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = Vec::new();
        let mut last: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..max_len {
            last = last
                .iter()
                .flat_map(|x| {
                    alphabet.iter().map(move |&c| {
                        let mut y = x.clone();
                        y.push(c);
                        y
                    })
                })
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    /// Whether both tables accept the same byte strings (a walk of the
    /// pairs of states the same strings reach; for tests).
    #[cfg(test)]
    pub fn same_language(&self, other: &Table) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![(0u32, 0u32)];
        while let Some((x, y)) = stack.pop() {
            if !seen.insert((x, y)) {
                continue;
            }
            let fx = x != DEAD && self.is_final[x as usize];
            let fy = y != DEAD && other.is_final[y as usize];
            if fx != fy {
                return false;
            }
            for byte in 0..=255u8 {
                let nx = if x == DEAD { DEAD } else { self.next(x, byte) };
                let ny = if y == DEAD { DEAD } else { other.next(y, byte) };
                if nx != DEAD || ny != DEAD {
                    stack.push((nx, ny));
                }
            }
        }
        true
    }

    /// Whether the table accepts `text` from state 0 (for tests).
    #[cfg(test)]
    pub fn accepts(&self, text: &[u8]) -> bool {
        let mut s = 0u32;
        for &b in text {
            s = self.next(s, b);
            if s == DEAD {
                return false;
            }
        }
        self.is_final[s as usize]
    }

    /// The maximal runs of consecutive bytes of one class, `(first,
    /// last, class)` in byte order: what [`Self::for_each_run`] steps
    /// over, computed once per table rather than once per state.
    pub fn class_runs(&self) -> Vec<(u8, u8, u8)> {
        let mut runs: Vec<(u8, u8, u8)> = Vec::new();
        for b in 0..=255u8 {
            let class = self.classes[b as usize];
            match runs.last_mut() {
                Some(run) if run.2 == class => run.1 = b,
                _ => runs.push((b, b, class)),
            }
        }
        runs
    }

    /// The transitions of state `s` as runs of consecutive bytes with
    /// one target, `f(first, last, target)` for each, dead runs left out:
    /// what an NFA embedding the table needs as edges. `runs` is
    /// [`Self::class_runs`].
    pub fn for_each_run(&self, runs: &[(u8, u8, u8)], s: u32, mut f: impl FnMut(u8, u8, u32)) {
        let row = &self.trans[s as usize * self.num_classes..][..self.num_classes];
        let Some(&(lo, hi, class)) = runs.first() else {
            return;
        };
        let (mut first, mut last, mut target) = (lo, hi, row[class as usize]);
        for &(lo, hi, class) in &runs[1..] {
            let t = row[class as usize];
            if t == target {
                last = hi;
                continue;
            }
            if target != DEAD {
                f(first, last, target);
            }
            (first, last, target) = (lo, hi, t);
        }
        if target != DEAD {
            f(first, last, target);
        }
    }

    /// Byte classes that keep every range of `ranges` (`(first, last)`
    /// bytes, an NFA's edges) whole: a class starts at each range's first
    /// byte and after its last. Returns the class of each byte and the
    /// first byte of each class.
    pub fn classes_of_ranges(ranges: impl Iterator<Item = (u8, u8)>) -> ([u8; 256], Vec<u8>) {
        let mut cut = [false; 257];
        cut[0] = true;
        for (lo, hi) in ranges {
            cut[lo as usize] = true;
            cut[hi as usize + 1] = true;
        }
        let mut classes = [0u8; 256];
        let mut reps = Vec::new();
        for b in 0..256 {
            if cut[b] {
                reps.push(b as u8);
            }
            classes[b] = (reps.len() - 1) as u8;
        }
        (classes, reps)
    }

    /// One representative byte per class.
    pub fn class_reps(&self) -> Vec<u8> {
        let mut reps: Vec<u8> = Vec::new();
        for b in 0..=255u8 {
            if self.classes[b as usize] as usize >= reps.len() {
                reps.push(b);
            }
        }
        reps
    }
}
