//! The DFA of an [`Expr::Rfc3339`](crate::ir::Expr) (`time` and
//! `date-time` with RFC 3339's leap seconds), built directly.
//!
//! A leap second (`:60`) is valid when the local time minus the offset is
//! 23:59, so the automaton remembers the local hour and minute until the
//! offset: 1,440 states per position from the minute to the offset, about
//! 11,000 over code points and 66,000 over JSON spellings (a digit may be
//! written `\u0036`). As the intersections of `regex::formats` the subset
//! constructions and minimizations took 0.2-0.4 s; here the states are
//! laid out by hand (named by what they remember, hence distinct), the
//! spellings added around each state, and the table built once per
//! process for each form.

use std::sync::{Arc, OnceLock};

use super::{Table, DEAD};
use crate::ir::{Rfc3339, TextForm};
use crate::util::hash::FastMap;

/// A DFA under construction: sparse edges, state 0 the start.
#[derive(Default)]
struct Builder {
    edges: Vec<Vec<(u8, u32)>>,
    is_final: Vec<bool>,
}

impl Builder {
    fn add(&mut self) -> u32 {
        self.edges.push(Vec::new());
        self.is_final.push(false);
        (self.edges.len() - 1) as u32
    }

    fn edge(&mut self, from: u32, byte: u8, to: u32) {
        self.edges[from as usize].push((byte, to));
    }

    fn digits(&mut self, from: u32, lo: u8, hi: u8, to: u32) {
        for d in lo..=hi {
            self.edge(from, b'0' + d, to);
        }
    }

    /// The same automaton with its states numbered in the order a
    /// depth-first search from the start finishes them, reversed: every
    /// transition but those closing a loop (a fraction's digits) leads to
    /// a later state, so that finding the live states of the JSON forms
    /// settles in two passes (see [`json_table`]) instead of building
    /// predecessor lists for 66,000 states.
    fn in_topological_order(self) -> Builder {
        let n = self.edges.len();
        let mut finished: Vec<u32> = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for root in 0..n as u32 {
            if seen[root as usize] {
                continue;
            }
            seen[root as usize] = true;
            stack.push((root, 0));
            while let Some(top) = stack.last_mut() {
                let (s, i) = *top;
                match self.edges[s as usize].get(i) {
                    Some(&(_, t)) => {
                        top.1 += 1;
                        if !seen[t as usize] {
                            seen[t as usize] = true;
                            stack.push((t, 0));
                        }
                    }
                    None => {
                        finished.push(s);
                        stack.pop();
                    }
                }
            }
        }
        // The start finishes last of its search: first once reversed.
        let mut new_id = vec![0u32; n];
        for (i, &s) in finished.iter().rev().enumerate() {
            new_id[s as usize] = i as u32;
        }
        let mut edges = vec![Vec::new(); n];
        let mut is_final = vec![false; n];
        for (s, mut row) in self.edges.into_iter().enumerate() {
            for e in &mut row {
                e.1 = new_id[e.1 as usize];
            }
            edges[new_id[s] as usize] = row;
            is_final[new_id[s] as usize] = self.is_final[s];
        }
        Builder { edges, is_final }
    }

    fn table(&self) -> Table {
        let mut rows = Rows::default();
        for (edges, &f) in self.edges.iter().zip(&self.is_final) {
            rows.state(f);
            rows.edges.extend_from_slice(edges);
        }
        rows.table()
    }
}

/// A DFA's sparse rows laid out one after another, in state order: each
/// state's edges are pushed right after it is added.
#[derive(Default)]
struct Rows {
    /// Where each state's edges start in `edges`.
    start: Vec<u32>,
    edges: Vec<(u8, u32)>,
    is_final: Vec<bool>,
}

impl Rows {
    /// Adds a state; the edges pushed next are its row.
    fn state(&mut self, is_final: bool) {
        self.start.push(self.edges.len() as u32);
        self.is_final.push(is_final);
    }

    fn table(&self) -> Table {
        let n = self.is_final.len();
        let row = |s: usize| {
            let end = self
                .start
                .get(s + 1)
                .map_or(self.edges.len(), |&e| e as usize);
            &self.edges[self.start[s] as usize..end]
        };
        // Each byte's column, `state << 32 | target` by state, laid out by
        // a counting sort: bytes whose columns are equal share a class.
        let mut col_start = [0usize; 257];
        for &(b, _) in &self.edges {
            col_start[b as usize + 1] += 1;
        }
        for b in 0..256 {
            col_start[b + 1] += col_start[b];
        }
        let mut fill = col_start;
        let mut columns = vec![0u64; self.edges.len()];
        for s in 0..n {
            for &(b, t) in row(s) {
                columns[fill[b as usize]] = (s as u64) << 32 | t as u64;
                fill[b as usize] += 1;
            }
        }
        // Compared with each class's column rather than hashed: columns
        // of one length are few, and comparing them stops early.
        let column = |b: usize| &columns[col_start[b]..col_start[b + 1]];
        let mut reps: Vec<usize> = Vec::new();
        let mut classes = [0u8; 256];
        for (b, class) in classes.iter_mut().enumerate() {
            let id = match reps.iter().position(|&r| column(r) == column(b)) {
                Some(id) => id,
                None => {
                    reps.push(b);
                    reps.len() - 1
                }
            };
            *class = id as u8;
        }
        let k = reps.len();
        let mut trans = vec![DEAD; n * k];
        for s in 0..n {
            for &(b, t) in row(s) {
                trans[s * k + classes[b as usize] as usize] = t;
            }
        }
        Table {
            classes,
            num_classes: k,
            trans,
            is_final: self.is_final.clone(),
        }
    }
}

/// `HH:MM:SS`, an optional fraction, then `Z`, `z` or `+HH:MM`/`-HH:MM`,
/// from `start`; second 60 only when the time in UTC is 23:59.
fn time(b: &mut Builder, start: u32) {
    let end = b.add();
    b.is_final[end as usize] = true;
    // Seconds 00-59, fraction and any offset: the same whatever the time.
    let (sec, frac0) = (b.add(), b.add());
    let (dot, frac) = (b.add(), b.add());
    b.digits(sec, 0, 9, frac0);
    b.edge(frac0, b'.', dot);
    b.digits(dot, 0, 9, frac);
    b.digits(frac, 0, 9, frac);
    let sign = b.add();
    let (h01, h2, hh, colon, m) = (b.add(), b.add(), b.add(), b.add(), b.add());
    for q in [frac0, frac] {
        for c in [b'Z', b'z', b'+', b'-'] {
            b.edge(q, c, if c.is_ascii_alphabetic() { end } else { sign });
        }
    }
    b.digits(sign, 0, 1, h01);
    b.digits(sign, 2, 2, h2);
    b.digits(h01, 0, 9, hh);
    b.digits(h2, 0, 3, hh);
    b.edge(hh, b':', colon);
    b.digits(colon, 0, 5, m);
    b.digits(m, 0, 9, end);
    // One offset `HH:MM` exactly: states by what is left to read.
    let last: Vec<u32> = (0..10u8)
        .map(|d| {
            let s = b.add();
            b.edge(s, b'0' + d, end);
            s
        })
        .collect();
    let minute: Vec<u32> = (0..60usize)
        .map(|mm| {
            let s = b.add();
            b.edge(s, b'0' + (mm / 10) as u8, last[mm % 10]);
            s
        })
        .collect();
    let after_hour: Vec<u32> = (0..60usize)
        .map(|mm| {
            let s = b.add();
            b.edge(s, b':', minute[mm]);
            s
        })
        .collect();
    let mut second_digit: Vec<u32> = vec![DEAD; 600];
    let mut offset: Vec<u32> = vec![DEAD; 1440];
    let mut exact_offset = |b: &mut Builder, x: usize| -> u32 {
        if offset[x] == DEAD {
            let (hh, mm) = (x / 60, x % 60);
            let i = (hh % 10) * 60 + mm;
            if second_digit[i] == DEAD {
                second_digit[i] = b.add();
                b.edge(second_digit[i], b'0' + (hh % 10) as u8, after_hour[mm]);
            }
            offset[x] = b.add();
            b.edge(offset[x], b'0' + (hh / 10) as u8, second_digit[i]);
        }
        offset[x]
    };
    // The local time, remembered.
    let first: Vec<u32> = (0..3u8)
        .map(|d| {
            let s = b.add();
            b.edge(start, b'0' + d, s);
            s
        })
        .collect();
    for h in 0..24usize {
        let hour = b.add();
        b.edge(first[h / 10], b'0' + (h % 10) as u8, hour);
        let hc = b.add();
        b.edge(hour, b':', hc);
        for m1 in 0..6usize {
            let tens = b.add();
            b.edge(hc, b'0' + m1 as u8, tens);
            for m2 in 0..10usize {
                let t = h * 60 + m1 * 10 + m2;
                let (hm, hmc, six, leap, ldot, lfrac) =
                    (b.add(), b.add(), b.add(), b.add(), b.add(), b.add());
                b.edge(tens, b'0' + m2 as u8, hm);
                b.edge(hm, b':', hmc);
                b.digits(hmc, 0, 5, sec);
                b.edge(hmc, b'6', six);
                b.edge(six, b'0', leap);
                b.edge(leap, b'.', ldot);
                b.digits(ldot, 0, 9, lfrac);
                b.digits(lfrac, 0, 9, lfrac);
                // Offset +o with t - o = 23:59, or -o with t + o = 23:59.
                let plus = exact_offset(b, (t + 1) % 1440);
                let minus = exact_offset(b, 1439 - t);
                for q in [leap, lfrac] {
                    if t == 1439 {
                        b.edge(q, b'Z', end);
                        b.edge(q, b'z', end);
                    }
                    b.edge(q, b'+', plus);
                    b.edge(q, b'-', minus);
                }
            }
        }
    }
}

/// `YYYY-MM-DD` from `start` (any year 0000-9999, 29 February in leap
/// years only); returns the state after it. The year's states remember
/// what decides a leap year: whether its first two digits are a multiple
/// of 4, then its last two's remainder by 4 and whether they are 00.
fn date(b: &mut Builder, start: u32) -> u32 {
    // `(10 a + b) mod 4 = (2 a + b) mod 4`.
    let after_first: [u32; 2] = [b.add(), b.add()]; // 2 * digit mod 4, halved
    for d in 0..10u8 {
        b.edge(start, b'0' + d, after_first[((2 * d) % 4 / 2) as usize]);
    }
    // After two digits: the century is a multiple of 4 (index 1) or not.
    let century: [u32; 2] = [b.add(), b.add()];
    for (half, &q) in after_first.iter().enumerate() {
        for d in 0..10u8 {
            let rem = (2 * half as u8 + d) % 4;
            b.edge(q, b'0' + d, century[(rem == 0) as usize]);
        }
    }
    // Third digit: (the last two may be 00 in a century that is not a
    // multiple of 4, 2 * digit mod 4). Elsewhere the last two decide.
    let mut third = FastMap::default();
    for (cc, &q) in century.iter().enumerate() {
        for d in 0..10u8 {
            let key = (d == 0 && cc == 0, (2 * d) % 4);
            let s = *third.entry(key).or_insert_with(|| b.add());
            b.edge(q, b'0' + d, s);
        }
    }
    // Fourth digit: a leap year (index 1) or not, then the hyphen.
    let year: [u32; 2] = [b.add(), b.add()];
    let month_start: [u32; 2] = [b.add(), b.add()];
    for leap in 0..2 {
        b.edge(year[leap], b'-', month_start[leap]);
    }
    for (&(common_00, rem), &s) in &third {
        for d in 0..10u8 {
            let leap = !(common_00 && d == 0) && (rem + d) % 4 == 0;
            b.edge(s, b'0' + d, year[leap as usize]);
        }
    }
    // Months by their days: 31, 30, February of a common or a leap year.
    let (m31, m30, feb) = (b.add(), b.add(), [b.add(), b.add()]);
    let m1 = b.add();
    b.edge(m1, b'0', m31);
    b.edge(m1, b'2', m31);
    b.edge(m1, b'1', m30);
    for leap in 0..2 {
        let m0 = b.add();
        b.edge(month_start[leap], b'0', m0);
        b.edge(month_start[leap], b'1', m1);
        for (d, to) in [(1, m31), (3, m31), (5, m31), (7, m31), (8, m31)] {
            b.edge(m0, b'0' + d, to);
        }
        for d in [4u8, 6, 9] {
            b.edge(m0, b'0' + d, m30);
        }
        b.edge(m0, b'2', feb[leap]);
    }
    // `-DD`.
    let end = b.add();
    let (any_digit, to_nine, to_eight) = (b.add(), b.add(), b.add());
    b.digits(any_digit, 0, 9, end);
    b.digits(to_nine, 1, 9, end);
    b.digits(to_eight, 0, 8, end);
    let (thirty, thirty_one) = (b.add(), b.add());
    b.digits(thirty, 0, 0, end);
    b.digits(thirty_one, 0, 1, end);
    let days = |b: &mut Builder, month: u32, last: Option<u32>, twenties: u32| {
        let dash = b.add();
        b.edge(month, b'-', dash);
        b.edge(dash, b'0', to_nine);
        b.edge(dash, b'1', any_digit);
        b.edge(dash, b'2', twenties);
        if let Some(last) = last {
            b.edge(dash, b'3', last);
        }
    };
    days(b, m31, Some(thirty_one), any_digit);
    days(b, m30, Some(thirty), any_digit);
    days(b, feb[0], None, to_eight);
    days(b, feb[1], None, any_digit);
    end
}

/// The code points of `time` or `date-time`.
fn chars(with_date: bool) -> Builder {
    let mut b = Builder::default();
    let start = b.add();
    if !with_date {
        time(&mut b, start);
        return b;
    }
    let end = date(&mut b, start);
    let t_start = b.add();
    b.edge(end, b'T', t_start);
    b.edge(end, b't', t_start);
    time(&mut b, t_start);
    b
}

/// The table of every JSON spelling of the strings of `c` (printable
/// ASCII without `"` and `\`), between quotes when `quoted`: each
/// character also as `\u00XX` (hex digits in either case), `/` also as
/// `\/`. A state's escapes depend on its transitions only, shared by
/// states that have the same.
///
/// The rows are laid out directly in state order, without a row of its
/// own per state: the JSON forms have 66,000 states, and built as rows
/// of their own, renumbered and columned, they took 10-15 ms, the
/// largest part of the first schema with a date-time. The order is the
/// start (the opening quote, or `c`'s start), the escapes up to their
/// last digit (`\`, `u`, `0`, `0`), the last digits, then `c`'s other
/// states in topological order and the closing quote: every transition
/// but those into an escape and a fraction's loop leads to a later
/// state, so that finding the live states
/// ([`LexemeDfa::from_table_by`](super::LexemeDfa)) marks them all in
/// one pass backwards.
fn json_table(c: &Builder, quoted: bool) -> Table {
    // The escapes of each distinct row of `c`: the state after the
    // backslash is `1 + 4 * group`, the high digits' targets are last
    // digit states (indices into `lasts`).
    let mut group_of: Vec<u32> = Vec::with_capacity(c.edges.len());
    let mut slash: Vec<Option<u32>> = Vec::new();
    let mut highs_start: Vec<u32> = vec![0];
    let mut highs: Vec<(u8, u32)> = Vec::new();
    // The last digit states: `(low digit, state of c)` rows.
    let mut lasts_start: Vec<u32> = vec![0];
    let mut lasts: Vec<(u8, u32)> = Vec::new();
    // Sized up front: growing rehashes every row.
    let mut by_row: FastMap<&[(u8, u32)], u32> =
        FastMap::with_capacity_and_hasher(c.edges.len(), Default::default());
    let mut by_lows: FastMap<Vec<(u8, u32)>, u32> =
        FastMap::with_capacity_and_hasher(c.edges.len(), Default::default());
    // `(high hex digit, low hex digit, target)` of one row.
    let mut spelled: Vec<(u8, u8, u32)> = Vec::new();
    let mut lows: Vec<(u8, u32)> = Vec::new();
    for row in &c.edges {
        if row.is_empty() {
            group_of.push(u32::MAX);
            continue;
        }
        if let Some(&g) = by_row.get(&row[..]) {
            group_of.push(g);
            continue;
        }
        spelled.clear();
        for &(ch, t) in row {
            let (high, low) = (ch >> 4, ch & 15);
            spelled.push((high, hex_digit(low), t));
            if low >= 10 {
                spelled.push((high, hex_digit(low).to_ascii_uppercase(), t));
            }
        }
        spelled.sort_unstable();
        for same_high in spelled.chunk_by(|a, b| a.0 == b.0) {
            lows.clear();
            lows.extend(same_high.iter().map(|&(_, low, t)| (low, t)));
            let last = match by_lows.get(&lows[..]) {
                Some(&last) => last,
                None => {
                    let last = lasts_start.len() as u32 - 1;
                    lasts.extend_from_slice(&lows);
                    lasts_start.push(lasts.len() as u32);
                    by_lows.insert(lows.clone(), last);
                    last
                }
            };
            highs.push((b'0' + same_high[0].0, last));
        }
        highs_start.push(highs.len() as u32);
        slash.push(row.iter().find(|&&(ch, _)| ch == b'/').map(|&(_, t)| t));
        let g = slash.len() as u32 - 1;
        by_row.insert(row, g);
        group_of.push(g);
    }
    let groups = slash.len() as u32;
    let first_last = 1 + 4 * groups;
    let first_char = first_last + lasts_start.len() as u32 - 1;
    // `c`'s states: its start is state 0 unquoted.
    let id = |q: u32| -> u32 {
        match (quoted, q) {
            (false, 0) => 0,
            (false, q) => first_char + q - 1,
            (true, q) => first_char + q,
        }
    };
    let n = c.edges.len() as u32;
    // After the closing quote (quoted only).
    let end = first_char + n;
    let states = if quoted { end + 1 } else { end - 1 } as usize;
    let mut rows = Rows::default();
    rows.start.reserve(states);
    rows.is_final.reserve(states);
    let char_edges: usize = c.edges.iter().map(|row| row.len() + 2).sum();
    rows.edges
        .reserve(char_edges + highs.len() + lasts.len() + 4 * groups as usize + 1);
    let char_row = |rows: &mut Rows, q: usize| {
        rows.state(!quoted && c.is_final[q]);
        let row = &c.edges[q];
        rows.edges.extend(row.iter().map(|&(ch, t)| (ch, id(t))));
        if group_of[q] != u32::MAX {
            rows.edges.push((b'\\', 1 + 4 * group_of[q]));
        }
        if quoted && c.is_final[q] {
            rows.edges.push((b'"', end));
        }
    };
    if quoted {
        rows.state(false);
        rows.edges.push((b'"', id(0)));
    } else {
        char_row(&mut rows, 0);
    }
    for g in 0..groups as usize {
        let e1 = 1 + 4 * g as u32;
        rows.state(false);
        if let Some(t) = slash[g] {
            rows.edges.push((b'/', id(t)));
        }
        rows.edges.push((b'u', e1 + 1));
        rows.state(false);
        rows.edges.push((b'0', e1 + 2));
        rows.state(false);
        rows.edges.push((b'0', e1 + 3));
        rows.state(false);
        let (a, b) = (highs_start[g] as usize, highs_start[g + 1] as usize);
        rows.edges.extend(
            highs[a..b]
                .iter()
                .map(|&(high, last)| (high, first_last + last)),
        );
    }
    for w in lasts_start.windows(2) {
        rows.state(false);
        let row = &lasts[w[0] as usize..w[1] as usize];
        rows.edges.extend(row.iter().map(|&(low, t)| (low, id(t))));
    }
    for q in usize::from(!quoted)..c.edges.len() {
        char_row(&mut rows, q);
    }
    if quoted {
        rows.state(true);
    }
    debug_assert_eq!(rows.is_final.len(), states);
    rows.table()
}

/// The lowercase hex digit of `v` (below 16).
fn hex_digit(v: u8) -> u8 {
    match v {
        0..=9 => b'0' + v,
        _ => b'a' + v - 10,
    }
}

/// The automaton over code points (about 11,000 states), in topological
/// order with sorted rows, built once per process.
fn chars_cached(date: bool) -> &'static Builder {
    static CACHE: [OnceLock<Builder>; 2] = [OnceLock::new(), OnceLock::new()];
    CACHE[usize::from(date)].get_or_init(|| {
        let mut b = chars(date).in_topological_order();
        // Sorted rows: states with equal rows share their escapes.
        b.edges.iter_mut().for_each(|row| row.sort_unstable());
        b
    })
}

/// The table of [`chars_cached`], made on first use (the JSON forms do
/// not need it): small (under a megabyte), and [`accepts`] runs it.
fn chars_table(date: bool) -> &'static Table {
    static CACHE: [OnceLock<Table>; 2] = [OnceLock::new(), OnceLock::new()];
    CACHE[usize::from(date)].get_or_init(|| chars_cached(date).table())
}

/// The DFA of `r`. The JSON forms (66,000 states, about 7 MB) are built
/// anew (41M instructions, 64M with their lexeme's tables: 6 ms of the
/// first such schema's compile on BENCHMARKS.md's machine), not kept
/// here: the lexeme cache keeps their lexemes within its budget, shared
/// by every schema of a vocabulary.
pub fn table(r: &Rfc3339) -> Arc<Table> {
    Arc::new(match r.form {
        TextForm::Chars => chars_table(r.date).clone(),
        TextForm::Spelled => json_table(chars_cached(r.date), false),
        TextForm::Quoted => json_table(chars_cached(r.date), true),
    })
}

#[cfg(test)]
/// Whether `r` matches `text` (code points for [`TextForm::Chars`], else
/// the JSON text).
fn accepts(r: &Rfc3339, text: &str) -> bool {
    let built;
    let t = match r.form {
        TextForm::Chars => chars_table(r.date),
        _ => {
            built = table(r);
            &*built
        }
    };
    table_accepts(t, text)
}

/// Whether table `t` accepts `text` from state 0.
#[cfg(test)]
fn table_accepts(t: &Table, text: &str) -> bool {
    let mut s = 0u32;
    for &byte in text.as_bytes() {
        s = t.next(s, byte);
        if s == DEAD {
            return false;
        }
    }
    t.is_final[s as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::lexeme::minimize;
    use crate::limits::Deadline;
    use crate::regex::expr::matches;
    use crate::regex::formats::rfc3339_regex;

    fn r(date: bool, form: TextForm) -> Rfc3339 {
        Rfc3339 { date, form }
    }

    #[test]
    fn leap_seconds_with_offsets() {
        let t = r(false, TextForm::Chars);
        for (s, ok) in [
            ("23:59:60Z", true),
            ("23:59:60z", true),
            ("23:59:60.123Z", true),
            ("15:59:60-08:00", true),
            ("00:29:60+00:30", true),
            ("01:29:60+01:30", true),
            ("00:29:60-23:30", true),
            ("23:59:60+00:00", true),
            ("23:59:60-00:00", true),
            ("00:00:60+00:01", true),
            ("23:59:60+01:00", false),
            ("22:59:60Z", false),
            ("15:59:60-07:00", false),
            ("15:59:60+08:00", false),
            ("23:58:60Z", false),
            ("23:59:61Z", false),
            ("23:59:60", false),
            ("12:00:00.5+05:30", true),
            ("12:00:00", false),
            ("24:00:00Z", false),
        ] {
            assert_eq!(accepts(&t, s), ok, "time {s}");
            let quoted = format!("\"{s}\"");
            assert_eq!(
                accepts(&r(false, TextForm::Quoted), &quoted),
                ok,
                "{quoted}"
            );
            let dt = format!("2024-12-31T{s}");
            assert_eq!(accepts(&r(true, TextForm::Chars), &dt), ok, "{dt}");
        }
        // Escapes.
        let q = r(true, TextForm::Quoted);
        assert!(accepts(&q, "\"1998-12-31T15:59:\\u0036\\u0030-08:00\""));
        assert!(accepts(
            &q,
            "\"1998-12-31\\u0074\\u0031\\u0035:59:60\\u002D08:00\""
        ));
        assert!(!accepts(&q, "\"1998-12-31T15:59:\\u0036\\u0030-07:00\""));
        assert!(!accepts(&q, "\"1998-12-31T15:59:\\u0036\\u0030-08:00"));
        assert!(!accepts(&q, "1998-12-31T15:59:60-08:00"));
        assert!(!accepts(&q, "\"1998-02-29T00:00:00Z\""));
        assert!(accepts(&q, "\"2000-02-29T00:00:00Z\""));
    }

    /// Every local time with the offsets that make it 23:59 UTC and
    /// offsets near them, against the regular expression of the rule.
    #[test]
    fn agrees_with_the_intersections() {
        let t = r(false, TextForm::Chars);
        let e = rfc3339_regex(false);
        for (local, hm, off, ok) in crate::regex::formats::leap_second_cases() {
            let text = format!("{hm}{off}");
            assert_eq!(accepts(&t, &text), ok, "time {text}");
            if local % 97 == 0 {
                assert_eq!(matches(&e, &text), ok, "regex {text}");
                let spelled: String = text
                    .chars()
                    .map(|c| format!("\\u{:04x}", c as u32))
                    .collect();
                assert_eq!(
                    accepts(&r(false, TextForm::Spelled), &spelled),
                    ok,
                    "{spelled}"
                );
            }
        }
    }

    /// The automaton and the direct check of the IR (`ir::rfc3339`)
    /// agree: every day of years that are and are not leap years (and
    /// days that do not exist), each form, and leap seconds with offsets.
    #[test]
    fn agrees_with_the_direct_check() {
        let mut texts = Vec::new();
        for year in ["0000", "1900", "2000", "2001", "2004", "2100", "9999"] {
            for month in 0..=13 {
                for day in 0..=32 {
                    texts.push(format!("{year}-{month:02}-{day:02}T12:00:00Z"));
                }
            }
        }
        for (_, hm, off, _) in crate::regex::formats::leap_second_cases()
            .into_iter()
            .step_by(7)
        {
            texts.push(format!("2016-12-31T{hm}{off}"));
            texts.push(format!("2016-12-31t{hm}.25{off}"));
        }
        let forms = [TextForm::Chars, TextForm::Spelled, TextForm::Quoted];
        let tables: Vec<(Rfc3339, Table)> = [true, false]
            .into_iter()
            .flat_map(|date| {
                forms.map(|form| (r(date, form), table(&r(date, form)).as_ref().clone()))
            })
            .collect();
        for text in &texts {
            for form in forms {
                let spelled: String = text
                    .chars()
                    .enumerate()
                    .map(|(i, c)| match i % 3 {
                        0 => format!("\\u{:04X}", c as u32),
                        _ => c.to_string(),
                    })
                    .collect();
                let (t, time) = match form {
                    TextForm::Chars => (text.clone(), text[11..].to_string()),
                    TextForm::Spelled => (spelled.clone(), text[11..].to_string()),
                    TextForm::Quoted => (format!("\"{spelled}\""), format!("\"{}\"", &text[11..])),
                };
                for (date, t) in [(true, &t), (false, &time)] {
                    let (r, table) = tables
                        .iter()
                        .find(|(r, _)| r.date == date && r.form == form)
                        .unwrap();
                    assert_eq!(table_accepts(table, t), r.matches(t), "{r:?} {t}");
                }
            }
        }
    }

    /// In the JSON forms every transition but a backslash's and a
    /// fraction's loop leads to a later state (see [`json_table`]).
    #[test]
    fn json_forms_lead_forward() {
        for date in [false, true] {
            for form in [TextForm::Spelled, TextForm::Quoted] {
                let t = table(&r(date, form));
                for s in 0..t.num_states() as u32 {
                    for b in 0..=255u8 {
                        let next = t.next(s, b);
                        assert!(
                            next == DEAD || next >= s || b == b'\\',
                            "{date} {form:?}: {s} -{}-> {next}",
                            b as char
                        );
                    }
                }
            }
        }
    }

    /// The tables are minimal: the states are named by what they
    /// remember.
    #[test]
    fn minimal() {
        for date in [false, true] {
            for form in [TextForm::Chars, TextForm::Spelled, TextForm::Quoted] {
                let t = table(&r(date, form));
                let m = minimize(&t, &Deadline::none()).unwrap();
                assert_eq!(m.num_states(), t.num_states(), "{date} {form:?}");
            }
        }
    }
}
