//! The DFA of an [`Expr::DecimalMultiple`](crate::ir::Expr): plain
//! decimals whose value is an integer multiple of `divisor / 10^scale`,
//! built directly from residues.
//!
//! `x` is such a multiple iff `N = x × 10^scale` is an integer divisible by
//! `divisor`: the digits past the `scale`-th fraction digit are zeros, and
//! the residue of the digits read so far (integer part, then up to `scale`
//! fraction digits), modulo `divisor`, decides the rest. A regular
//! expression of the same language needs state elimination over the
//! residue automaton, which grows exponentially with the divisor; the
//! table has `divisor × (scale + 2) + 3` states and is built in linear
//! time.

use super::{Table, DEAD};
use crate::ir::DecimalMultiple;

/// Byte classes: `-`, `.`, the ten digits, anything else.
const MINUS: usize = 0;
const POINT: usize = 1;
const DIGIT0: usize = 2;
const OTHER: usize = 12;
const CLASSES: usize = 13;

/// The table of `m` (state 0 the start), before minimization.
pub fn table(m: &DecimalMultiple) -> Table {
    let a = m.divisor.max(1) as u64;
    let k = m.scale;
    let mut classes = [OTHER as u8; 256];
    classes[b'-' as usize] = MINUS as u8;
    classes[b'.' as usize] = POINT as u8;
    for d in 0..10u8 {
        classes[(b'0' + d) as usize] = (DIGIT0 + d as usize) as u8;
    }
    // States: 0 start, 1 after '-', 2 integer part "0", then the integer
    // part's residues (3 + r), the residues just after the point, and per
    // count p in 0..=k of fraction digits read (capped at k) the residues.
    let au = a as usize;
    let int_state = |r: u64| 3 + r as u32;
    let point_state = |r: u64| (3 + au + r as usize) as u32;
    let frac_state = |p: u32, r: u64| (3 + au * (p as usize + 2) + r as usize) as u32;
    let n = 3 + au * (k as usize + 3);
    let mut trans = vec![DEAD; n * CLASSES];
    let mut is_final = vec![false; n];
    // pow[e] = 10^e mod a.
    let mut pow = vec![1u64 % a; k as usize + 1];
    for e in 1..=k as usize {
        pow[e] = pow[e - 1] * 10 % a;
    }
    let set = |trans: &mut Vec<u32>, s: u32, c: usize, t: u32| {
        trans[s as usize * CLASSES + c] = t;
    };
    for start in [0u32, 1] {
        set(&mut trans, start, DIGIT0, 2);
        for d in 1..10u64 {
            set(&mut trans, start, DIGIT0 + d as usize, int_state(d % a));
        }
    }
    set(&mut trans, 0, MINUS, 1);
    // "0": residue 0, a point may follow.
    is_final[2] = true;
    set(&mut trans, 2, POINT, point_state(0));
    for r in 0..a {
        let s = int_state(r);
        is_final[s as usize] = (r * pow[k as usize]).is_multiple_of(a);
        for d in 0..10u64 {
            set(
                &mut trans,
                s,
                DIGIT0 + d as usize,
                int_state((r * 10 + d) % a),
            );
        }
        set(&mut trans, s, POINT, point_state(r));
        // After the point: at least one digit. With k = 0 only zeros.
        let q = point_state(r);
        if k == 0 {
            set(&mut trans, q, DIGIT0, frac_state(0, r));
        } else {
            for d in 0..10u64 {
                set(
                    &mut trans,
                    q,
                    DIGIT0 + d as usize,
                    frac_state(1, (r * 10 + d) % a),
                );
            }
        }
        for p in 0..=k {
            let s = frac_state(p, r);
            if p == 0 && k > 0 {
                continue;
            }
            is_final[s as usize] = (r * pow[(k - p) as usize]).is_multiple_of(a);
            if p < k {
                for d in 0..10u64 {
                    set(
                        &mut trans,
                        s,
                        DIGIT0 + d as usize,
                        frac_state(p + 1, (r * 10 + d) % a),
                    );
                }
            } else {
                // Past the scale only zeros, which do not change N.
                set(&mut trans, s, DIGIT0, s);
            }
        }
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
    /// characters over `-.0123456789` (and a few longer ones).
    #[test]
    fn table_matches_direct_check() {
        let texts = Table::strings_over(b"-.0123456789", 5);
        for divisor in [1u32, 2, 3, 7, 12, 25, 1024] {
            for scale in 0..=3u32 {
                let m = DecimalMultiple { divisor, scale };
                let t = table(&m);
                for x in &texts {
                    assert_eq!(
                        t.accepts(x),
                        m.matches(x),
                        "{m:?} {}",
                        String::from_utf8_lossy(x)
                    );
                }
                for x in [&b"1048576"[..], b"-2048.000", b"0.0010240", b"3.14159"] {
                    assert_eq!(t.accepts(x), m.matches(x), "{m:?}");
                }
            }
        }
        let m = DecimalMultiple {
            divisor: 1024,
            scale: 0,
        };
        assert!(m.matches(b"1048576") && !m.matches(b"1048577") && !m.matches(b"01024"));
    }
}
