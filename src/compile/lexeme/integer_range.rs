//! The DFA of an [`Expr::IntegerRange`](crate::ir::Expr): the JSON texts
//! of the integers from `min` to `max` in every spelling
//! [`IntegerRange`] lists (`7`, `7.00`, `7e0`, `7.0E+00`; not `0.7e1`),
//! built directly. Its states are bounded by the bounds' digits (at most
//! 39) and the 16 fraction digits of a mantissa, so it needs no deadline.
//!
//! As an intersection (every integer, then `>= min`, then `<= max`) the
//! same language took two products and two minimizations of 200 to 650
//! states, about half a millisecond per distinct range, and
//! configuration schemas bound dozens of integers (ports, counts,
//! percentages), each differently. Here a state is what a reader of the
//! text must remember, interned as it is met, so the table is small
//! before minimization:
//! - the digits of a plain integer are compared with the bounds' digits
//!   at the same positions (less, equal or greater so far), and the
//!   number of digits decides the rest;
//! - a scientific mantissa `d.ddd` is compared the same way. A value
//!   written with exponent `e` has `e + 1` digits: the mantissa's, then
//!   zeros. So at the `e` the comparisons, with the position of the last
//!   nonzero fraction digit (the exponent must reach it), bound the
//!   exponent to an interval, and the exponent is read as a number
//!   (leading zeros allowed) checked against it;
//! - a negative text reads its magnitude against the bounds negated.

use std::cmp::Ordering;

use super::{Table, DEAD};
use crate::ir::{IntegerRange, INTEGER_SCI_FRACTION_DIGITS};
use crate::util::hash::FastMap;

/// Byte classes: the ten digits, then these, then anything else.
const POINT: usize = 10;
const EXP_MARK: usize = 11;
const PLUS: usize = 12;
const MINUS: usize = 13;
const OTHER: usize = 14;
const CLASSES: usize = 15;

/// The magnitudes one sign allows: `min..=max` (`max` `None`: no bound),
/// as decimal digits (each 0-9, no leading zero, zero is `[0]`).
struct Magnitudes {
    min: Vec<u8>,
    max: Option<Vec<u8>>,
}

impl Magnitudes {
    /// `None` when the range is empty.
    fn new(min: u128, max: Option<u128>) -> Option<Magnitudes> {
        if max.is_some_and(|m| m < min) {
            return None;
        }
        let digits = |v: u128| v.to_string().bytes().map(|b| b - b'0').collect();
        Some(Magnitudes {
            min: digits(min),
            max: max.map(digits),
        })
    }

    /// Whether a value of `len` digits that compares with the bounds'
    /// first digits as `vs_min` and `vs_max` lies in the range.
    fn holds(&self, len: usize, vs_min: Ordering, vs_max: Ordering) -> bool {
        let n = self.min.len();
        let at_least = len > n || (len == n && vs_min != Ordering::Less);
        let at_most = self
            .max
            .as_ref()
            .is_none_or(|max| len < max.len() || (len == max.len() && vs_max != Ordering::Greater));
        at_least && at_most
    }
}

/// How the digits read compare with a bound's first digits, after digit
/// `d` at position `pos` (positions past the bound's length change
/// nothing: a longer number is decided by its length).
fn compare_on(so_far: Ordering, pos: usize, d: u8, bound: &[u8]) -> Ordering {
    match (so_far, bound.get(pos)) {
        (Ordering::Equal, Some(&b)) => d.cmp(&b),
        _ => so_far,
    }
}

/// Which magnitudes: those of a text without a sign, or after `-`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Sign {
    Plus,
    Minus,
}

/// What is left of an exponent, `[+-]?[0-9]+` (see [`Key::Exponent`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum ExponentPart {
    /// Right after `e` or `E`.
    Mark,
    /// After a sign that allows any digits next.
    Sign,
    /// After `-` where only zero is allowed: whether a `0` was read.
    MinusZero(bool),
    /// Digits read, of this value (capped where higher ones compare alike).
    Digits(u32),
}

/// A state of the DFA.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Start,
    /// After `-`.
    Negative,
    /// A magnitude of zero: `0`, then `0.`, then `0.0+` (`phase` 0-2).
    Zero {
        phase: u8,
    },
    /// `[1-9][0-9]*`: `len` digits, compared with the bounds' first
    /// digits. With one digit, it is also a scientific mantissa.
    Int {
        sign: Sign,
        len: usize,
        vs_min: Ordering,
        vs_max: Ordering,
    },
    /// After a plain integer in the range and a point: `0+` to the end
    /// (`zeros`: one was read).
    Zeros {
        zeros: bool,
    },
    /// After a mantissa's point and `digits` fraction digits (the last
    /// nonzero one at `last_nonzero`, 0 for none), the mantissa compared
    /// with the bounds' first digits. `plain`: the digits so far are
    /// zeros after a plain integer in the range, which they may end.
    Fraction {
        sign: Sign,
        digits: usize,
        last_nonzero: usize,
        vs_min: Ordering,
        vs_max: Ordering,
        plain: bool,
    },
    /// An exponent whose value must lie in `min..=max` (`min` `None`: any
    /// value, negative ones included, for zero; `max` `None`: no bound).
    Exponent {
        min: Option<u32>,
        max: Option<u32>,
        part: ExponentPart,
    },
}

struct Builder {
    plus: Option<Magnitudes>,
    minus: Option<Magnitudes>,
}

impl Builder {
    fn magnitudes(&self, sign: Sign) -> &Magnitudes {
        match sign {
            Sign::Plus => self.plus.as_ref(),
            Sign::Minus => self.minus.as_ref(),
        }
        .expect("states of a sign exist only when it allows values")
    }

    fn is_final(&self, key: Key) -> bool {
        match key {
            Key::Start | Key::Negative => false,
            Key::Zero { phase } => phase != 1,
            Key::Int {
                sign,
                len,
                vs_min,
                vs_max,
            } => self.magnitudes(sign).holds(len, vs_min, vs_max),
            Key::Zeros { zeros } => zeros,
            Key::Fraction { digits, plain, .. } => plain && digits > 0,
            Key::Exponent { min, max, part } => match part {
                ExponentPart::Mark | ExponentPart::Sign => false,
                ExponentPart::MinusZero(zero) => zero,
                ExponentPart::Digits(v) => min.is_none_or(|m| v >= m) && max.is_none_or(|m| v <= m),
            },
        }
    }

    /// The state after the first digit `d` of a magnitude of `sign`.
    fn first_digit(&self, sign: Sign, d: u8) -> Option<Key> {
        let m = self.magnitudes(sign);
        if d == 0 {
            return (m.min == [0]).then_some(Key::Zero { phase: 0 });
        }
        self.int(
            sign,
            1,
            compare_on(Ordering::Equal, 0, d, &m.min),
            m.max.as_ref().map_or(Ordering::Equal, |max| {
                compare_on(Ordering::Equal, 0, d, max)
            }),
        )
    }

    /// An `Int` state in its canonical form: what no longer matters is
    /// forgotten, so that the states stay few (and finite without `max`).
    fn int(&self, sign: Sign, len: usize, vs_min: Ordering, vs_max: Ordering) -> Option<Key> {
        let m = self.magnitudes(sign);
        let (len, vs_min, vs_max) = match &m.max {
            Some(max) if len > max.len() => return None,
            Some(_) => (len, vs_min, vs_max),
            // Longer than `min` (and not a mantissa): every continuation
            // is in the range.
            None if len > m.min.len() && len > 1 => {
                (m.min.len() + 1, Ordering::Greater, Ordering::Equal)
            }
            None => (len, vs_min, Ordering::Equal),
        };
        Some(Key::Int {
            sign,
            len,
            vs_min,
            vs_max,
        })
    }

    /// The exponent interval of a mantissa of `len` digits whose last
    /// nonzero fraction digit is at `last_nonzero`, compared with the
    /// bounds' first digits: `None` when it is empty.
    fn exponent(
        &self,
        sign: Sign,
        len: usize,
        last_nonzero: usize,
        vs_min: Ordering,
        vs_max: Ordering,
    ) -> Option<Key> {
        let m = self.magnitudes(sign);
        let n = m.min.len();
        // The mantissa padded with zeros to `n` digits is at least `min`.
        let reaches_min = match vs_min {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => len >= n || m.min[len..].iter().all(|&d| d == 0),
        };
        let min = last_nonzero.max(if reaches_min { n - 1 } else { n });
        let max = match &m.max {
            None => None,
            Some(max) => {
                let top = max.len() as i64 - if vs_max == Ordering::Greater { 2 } else { 1 };
                if top < min as i64 {
                    return None;
                }
                Some(top as u32)
            }
        };
        Some(Key::Exponent {
            min: Some(min as u32),
            max,
            part: ExponentPart::Mark,
        })
    }

    /// Where `key` goes on a byte of `class`.
    fn step(&self, key: Key, class: usize) -> Option<Key> {
        let digit = (class < 10).then_some(class as u8);
        match key {
            Key::Start => match (class, digit) {
                (MINUS, _) => self.minus.as_ref().map(|_| Key::Negative),
                (_, Some(d)) if self.plus.is_some() => self.first_digit(Sign::Plus, d),
                _ => None,
            },
            Key::Negative => self.first_digit(Sign::Minus, digit?),
            Key::Zero { phase } => match (phase, class) {
                (0, POINT) => Some(Key::Zero { phase: 1 }),
                (1 | 2, 0) => Some(Key::Zero { phase: 2 }),
                (0 | 2, EXP_MARK) => Some(Key::Exponent {
                    min: None,
                    max: None,
                    part: ExponentPart::Mark,
                }),
                _ => None,
            },
            Key::Int {
                sign,
                len,
                vs_min,
                vs_max,
            } => {
                let m = self.magnitudes(sign);
                let holds = m.holds(len, vs_min, vs_max);
                if let Some(d) = digit {
                    let vs_max = m
                        .max
                        .as_ref()
                        .map_or(vs_max, |max| compare_on(vs_max, len, d, max));
                    return self.int(sign, len + 1, compare_on(vs_min, len, d, &m.min), vs_max);
                }
                match class {
                    POINT if len == 1 => Some(Key::Fraction {
                        sign,
                        digits: 0,
                        last_nonzero: 0,
                        vs_min,
                        vs_max,
                        plain: holds,
                    }),
                    POINT => holds.then_some(Key::Zeros { zeros: false }),
                    EXP_MARK if len == 1 => self.exponent(sign, 1, 0, vs_min, vs_max),
                    _ => None,
                }
            }
            Key::Zeros { .. } => (class == 0).then_some(Key::Zeros { zeros: true }),
            Key::Fraction {
                sign,
                digits,
                last_nonzero,
                vs_min,
                vs_max,
                plain,
            } => {
                if class == EXP_MARK && digits > 0 {
                    return self.exponent(sign, digits + 1, last_nonzero, vs_min, vs_max);
                }
                let d = digit?;
                let plain = plain && d == 0;
                let m = self.magnitudes(sign);
                let last_nonzero = if d == 0 { last_nonzero } else { digits + 1 };
                // Past the mantissa's last digit, or a digit the exponent
                // cannot reach without passing `max`: only zeros after a
                // plain integer go on.
                let too_long = digits == INTEGER_SCI_FRACTION_DIGITS
                    || m.max.as_ref().is_some_and(|max| last_nonzero >= max.len());
                if too_long {
                    return plain.then_some(Key::Zeros { zeros: true });
                }
                let pos = digits + 1;
                let vs_max = match &m.max {
                    Some(max) => compare_on(vs_max, pos, d, max),
                    None => Ordering::Equal,
                };
                let mut vs_min = compare_on(vs_min, pos, d, &m.min);
                // The exponent is at least `len(min) - 1` anyway: a last
                // nonzero digit before that does not matter, and one past
                // it makes the value longer than `min`.
                let last_nonzero = match last_nonzero.cmp(&m.min.len()) {
                    Ordering::Less => 0,
                    _ => {
                        vs_min = Ordering::Greater;
                        last_nonzero
                    }
                };
                Some(Key::Fraction {
                    sign,
                    digits: digits + 1,
                    last_nonzero,
                    vs_min,
                    vs_max,
                    plain,
                })
            }
            Key::Exponent { min, max, part } => {
                let next = |part| Some(Key::Exponent { min, max, part });
                match (part, class, digit) {
                    (ExponentPart::Mark, PLUS, _) => next(ExponentPart::Sign),
                    // A negative exponent: only zero for a mantissa (`min`
                    // is at least 0), anything for zero.
                    (ExponentPart::Mark, MINUS, _) => match min {
                        None => next(ExponentPart::Sign),
                        Some(0) => next(ExponentPart::MinusZero(false)),
                        Some(_) => None,
                    },
                    (ExponentPart::MinusZero(_), 0, _) => next(ExponentPart::MinusZero(true)),
                    (ExponentPart::Mark | ExponentPart::Sign, _, Some(d)) => {
                        self.exponent_digits(min, max, 0, d)
                    }
                    (ExponentPart::Digits(v), _, Some(d)) => self.exponent_digits(min, max, v, d),
                    _ => None,
                }
            }
        }
    }

    /// The exponent after digit `d` following digits of value `v`.
    fn exponent_digits(&self, min: Option<u32>, max: Option<u32>, v: u32, d: u8) -> Option<Key> {
        let Some(low) = min else {
            // Any exponent (zero's): the value does not matter.
            return Some(Key::Exponent {
                min,
                max,
                part: ExponentPart::Digits(0),
            });
        };
        // Values past both bounds compare alike.
        let cap = low.max(max.unwrap_or(0)) + 1;
        let v = (v * 10 + d as u32).min(cap);
        if max.is_some_and(|m| v > m) {
            return None;
        }
        Some(Key::Exponent {
            min,
            max,
            part: ExponentPart::Digits(v),
        })
    }
}

/// The table of `range` (state 0 the start), before minimization.
pub fn table(range: &IntegerRange) -> Table {
    let (min, max) = (range.min, range.max);
    // Magnitudes without a sign: `max(min, 0)..=max`; after `-`, those of
    // `min..=max` negated and at most 0 (`-0` is zero).
    let plus = match max {
        Some(m) if m < 0 => None,
        _ => Magnitudes::new(min.map_or(0, |m| m.max(0) as u128), max.map(|m| m as u128)),
    };
    let minus = match min {
        Some(m) if m > 0 => None,
        _ => Magnitudes::new(
            max.map_or(0, |m| if m < 0 { m.unsigned_abs() } else { 0 }),
            min.map(i128::unsigned_abs),
        ),
    };
    let builder = Builder { plus, minus };

    let mut classes = [OTHER as u8; 256];
    for d in 0..10u8 {
        classes[(b'0' + d) as usize] = d;
    }
    classes[b'.' as usize] = POINT as u8;
    classes[b'e' as usize] = EXP_MARK as u8;
    classes[b'E' as usize] = EXP_MARK as u8;
    classes[b'+' as usize] = PLUS as u8;
    classes[b'-' as usize] = MINUS as u8;

    let mut ids: FastMap<Key, u32> = FastMap::default();
    let mut keys = vec![Key::Start];
    ids.insert(Key::Start, 0);
    let mut trans: Vec<u32> = Vec::new();
    let mut is_final = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let key = keys[i];
        is_final.push(builder.is_final(key));
        for class in 0..CLASSES {
            let target = match builder.step(key, class) {
                None => DEAD,
                Some(next) => *ids.entry(next).or_insert_with(|| {
                    keys.push(next);
                    keys.len() as u32 - 1
                }),
            };
            trans.push(target);
        }
        i += 1;
    }
    Table {
        classes,
        num_classes: CLASSES,
        trans,
        is_final,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table agrees with the direct check on every string of up to 5
    /// characters over `-+.0123eE` and on longer spellings around the
    /// bounds.
    #[test]
    fn table_matches_direct_check() {
        let bounds = [
            None,
            Some(-1000),
            Some(-120),
            Some(-7),
            Some(-1),
            Some(0),
            Some(1),
            Some(3),
            Some(10),
            Some(23),
            Some(100),
            Some(320),
            Some(12_000),
        ];
        let mut all = Table::strings_over(b"-+.0123eE", 5);
        for s in [
            "1.2e4",
            "1.20000e+004",
            "3.2E2",
            "3.21e2",
            "-1.2e2",
            "-1.20e+2",
            "1e3",
            "1.0e3",
            "12000",
            "12000.000",
            "1.2000000000000000e4",
            "1.20000000000000000e4",
            "-0.000e-7",
            "1.0000000000000001e16",
            "1.00000000000000001e17",
            "9.99e2",
            "1e0",
            "1e-0",
            "1e-1",
        ] {
            all.push(s.as_bytes().to_vec());
        }
        for &min in &bounds {
            for &max in &bounds {
                let r = IntegerRange { min, max };
                let t = table(&r);
                for x in &all {
                    assert_eq!(
                        t.accepts(x),
                        r.matches(x),
                        "{r:?} {}",
                        String::from_utf8_lossy(x)
                    );
                }
            }
        }
    }
}
