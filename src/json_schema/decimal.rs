//! Exact decimal numbers (schema bounds, `multipleOf`, `const` values).
//!
//! JSON Schema compares numbers by their mathematical value. The number
//! automata are built digit by digit from a bound's decimal expansion, so
//! bounds are kept as decimal digit strings, never as binary floats.

use std::cmp::Ordering;

/// `±0.d1 d2 ... dn × 10^exp` with `d1 != 0` and `dn != 0`; zero has no
/// digits (and is never negative).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dec {
    pub neg: bool,
    /// Significant digits, each 0..=9, no leading or trailing zeros.
    pub digits: Vec<u8>,
    pub exp: i64,
}

impl Dec {
    pub fn zero() -> Dec {
        Dec {
            neg: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    /// Parses JSON number syntax (and the forms `serde_json` prints).
    pub fn parse(s: &str) -> Option<Dec> {
        let b = s.as_bytes();
        let mut i = 0;
        let neg = b.first() == Some(&b'-');
        if neg {
            i += 1;
        }
        let mut mant: Vec<u8> = Vec::new();
        let mut point: Option<usize> = None;
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            if b[i] == b'.' {
                if point.is_some() {
                    return None;
                }
                point = Some(mant.len());
            } else {
                mant.push(b[i] - b'0');
            }
            i += 1;
        }
        if i == start || mant.is_empty() {
            return None;
        }
        let mut e: i64 = 0;
        if i < b.len() {
            if b[i] != b'e' && b[i] != b'E' {
                return None;
            }
            i += 1;
            let eneg = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let es = &s[i..];
            if es.is_empty() || !es.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let v: i64 = es.parse().ok()?;
            e = if eneg { -v } else { v };
        }
        let int_len = point.unwrap_or(mant.len()) as i64;
        // value = 0.mant × 10^int_len × 10^e, then strip zeros.
        let lead = mant.iter().take_while(|&&d| d == 0).count();
        let digits: Vec<u8> = mant[lead..].to_vec();
        let mut d = Dec {
            neg,
            digits,
            exp: int_len - lead as i64 + e,
        };
        while d.digits.last() == Some(&0) {
            d.digits.pop();
        }
        if d.digits.is_empty() {
            return Some(Dec::zero());
        }
        Some(d)
    }

    pub fn from_json(n: &serde_json::Number) -> Option<Dec> {
        Dec::parse(&n.to_string())
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn abs(&self) -> Dec {
        Dec {
            neg: false,
            ..self.clone()
        }
    }

    pub fn is_integer(&self) -> bool {
        self.exp >= self.digits.len() as i64
    }

    /// The value as an `i128`, if it is an integer that fits.
    pub fn to_i128(&self) -> Option<i128> {
        if !self.is_integer() || self.exp > 39 {
            return None;
        }
        let magnitude: i128 = self.int_part().parse().ok()?;
        Some(if self.neg { -magnitude } else { magnitude })
    }

    /// Digits of the integer part, without leading zeros ("0" below one).
    pub fn int_part(&self) -> String {
        if self.exp <= 0 || self.is_zero() {
            return "0".into();
        }
        let mut s = String::new();
        for i in 0..self.exp as usize {
            s.push((b'0' + self.digits.get(i).copied().unwrap_or(0)) as char);
        }
        s
    }

    /// Digits of the fractional part, without trailing zeros.
    pub fn frac_part(&self) -> String {
        let mut s = String::new();
        let n = self.digits.len() as i64;
        if self.exp >= n {
            return s;
        }
        for _ in 0..(-self.exp).max(0) {
            s.push('0');
        }
        for &d in &self.digits[self.exp.max(0) as usize..] {
            s.push((b'0' + d) as char);
        }
        s
    }

    /// The value as text (for messages and keys).
    pub fn to_text(&self) -> String {
        let f = self.frac_part();
        let sign = if self.neg { "-" } else { "" };
        if f.is_empty() {
            format!("{sign}{}", self.int_part())
        } else {
            format!("{sign}{}.{f}", self.int_part())
        }
    }

    fn cmp_abs(&self, o: &Dec) -> Ordering {
        match (self.is_zero(), o.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        self.exp
            .cmp(&o.exp)
            .then_with(|| self.digits.cmp(&o.digits))
    }

    pub fn cmp_value(&self, o: &Dec) -> Ordering {
        match (self.neg, o.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_abs(o),
            (true, true) => o.cmp_abs(self),
        }
    }

    /// The largest integer <= self.
    pub fn floor(&self) -> Dec {
        if self.is_integer() {
            return self.clone();
        }
        let t = self.trunc();
        if self.neg {
            t.add_int(-1)
        } else {
            t
        }
    }

    /// The smallest integer >= self.
    pub fn ceil(&self) -> Dec {
        if self.is_integer() {
            return self.clone();
        }
        let t = self.trunc();
        if self.neg {
            t
        } else {
            t.add_int(1)
        }
    }

    fn trunc(&self) -> Dec {
        let s = self.int_part();
        let mut d = Dec::parse(&s).unwrap();
        if !d.is_zero() {
            d.neg = self.neg;
        }
        d
    }

    /// `self + k` for an integer `self` and `k` in {-1, 1}.
    pub fn add_int(&self, k: i32) -> Dec {
        if self.is_zero() {
            return Dec {
                neg: k < 0,
                digits: vec![1],
                exp: 1,
            };
        }
        // Work on the signed integer's digit string.
        let mag = self.int_part();
        let up = (k > 0) != self.neg; // magnitude grows
        let mut digits: Vec<u8> = mag.bytes().map(|c| c - b'0').collect();
        if up {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, 1);
                    break;
                }
                i -= 1;
                if digits[i] == 9 {
                    digits[i] = 0;
                } else {
                    digits[i] += 1;
                    break;
                }
            }
            let s: String = digits.iter().map(|d| (b'0' + d) as char).collect();
            let mut d = Dec::parse(&s).unwrap();
            d.neg = self.neg || (self.is_zero() && k < 0);
            d
        } else {
            // magnitude shrinks by one (magnitude >= 1 here).
            let mut i = digits.len();
            loop {
                i -= 1;
                if digits[i] == 0 {
                    digits[i] = 9;
                } else {
                    digits[i] -= 1;
                    break;
                }
            }
            let s: String = digits.iter().map(|d| (b'0' + d) as char).collect();
            let mut d = Dec::parse(&s).unwrap();
            if !d.is_zero() {
                d.neg = self.neg;
            }
            d
        }
    }

    /// `(A, k)` with `self = A × 10^-k`, `A` a positive integer (as digits)
    /// and `k >= 0`; for a positive `self`.
    pub fn as_scaled_int(&self) -> (Vec<u8>, u32) {
        let n = self.digits.len() as i64;
        if self.exp >= n {
            let mut a = self.digits.clone();
            a.extend(std::iter::repeat_n(0, (self.exp - n) as usize));
            (a, 0)
        } else {
            (self.digits.clone(), (n - self.exp) as u32)
        }
    }

    /// Whether `self` is an integer multiple of `m` (`m > 0`); `None` when
    /// the numbers are too large to decide here.
    pub fn is_multiple_of(&self, m: &Dec) -> Option<bool> {
        if self.is_zero() {
            return Some(true);
        }
        let (a, ka) = self.abs().as_scaled_int();
        let (b, kb) = m.as_scaled_int();
        // self / m = (a / b) × 10^(kb - ka)
        let bv = digits_to_u128(&b)?;
        if kb >= ka {
            // a × 10^(kb-ka) mod b
            let mut r: u128 = 0;
            for &d in a
                .iter()
                .chain(std::iter::repeat_n(&0u8, (kb - ka) as usize))
            {
                r = (r * 10 + d as u128) % bv;
            }
            Some(r == 0)
        } else {
            // a / (b × 10^(ka-kb)) must be an integer: a has no trailing
            // zeros beyond its scale, so a must end in (ka-kb) zeros.
            let z = (ka - kb) as usize;
            if a.len() < z || a[a.len() - z..].iter().any(|&d| d != 0) {
                return Some(false);
            }
            let mut r: u128 = 0;
            for &d in &a[..a.len() - z] {
                r = (r * 10 + d as u128) % bv;
            }
            Some(r == 0)
        }
    }
}

pub fn digits_to_u128(d: &[u8]) -> Option<u128> {
    let mut v: u128 = 0;
    for &x in d {
        v = v.checked_mul(10)?.checked_add(x as u128)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_parts() {
        let d = Dec::parse("123.4500").unwrap();
        assert_eq!(d.int_part(), "123");
        assert_eq!(d.frac_part(), "45");
        let d = Dec::parse("0.0012").unwrap();
        assert_eq!(d.int_part(), "0");
        assert_eq!(d.frac_part(), "0012");
        assert_eq!(Dec::parse("1e3").unwrap().int_part(), "1000");
        assert_eq!(Dec::parse("-0.0").unwrap(), Dec::zero());
        assert_eq!(Dec::parse("1.5e-7").unwrap().frac_part(), "00000015");
        assert!(Dec::parse("1.5")
            .unwrap()
            .cmp_value(&Dec::parse("15e-1").unwrap())
            .is_eq());
        assert!(Dec::parse("-2")
            .unwrap()
            .cmp_value(&Dec::parse("-1").unwrap())
            .is_lt());
        assert_eq!(
            Dec::parse("-1.5").unwrap().floor(),
            Dec::parse("-2").unwrap()
        );
        assert_eq!(
            Dec::parse("-1.5").unwrap().ceil(),
            Dec::parse("-1").unwrap()
        );
        assert_eq!(Dec::parse("0.5").unwrap().ceil(), Dec::parse("1").unwrap());
        assert_eq!(Dec::parse("-0.5").unwrap().ceil(), Dec::zero());
        assert_eq!(Dec::parse("9.5").unwrap().ceil(), Dec::parse("10").unwrap());
        assert_eq!(
            Dec::parse("7.5")
                .unwrap()
                .is_multiple_of(&Dec::parse("2.5").unwrap()),
            Some(true)
        );
        assert_eq!(
            Dec::parse("0.075")
                .unwrap()
                .is_multiple_of(&Dec::parse("0.01").unwrap()),
            Some(false)
        );
        assert_eq!(
            Dec::parse("20")
                .unwrap()
                .is_multiple_of(&Dec::parse("0.01").unwrap()),
            Some(true)
        );
    }
}
