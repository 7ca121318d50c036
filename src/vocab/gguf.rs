//! The metadata of a GGUF file (llama.cpp's model format), read without
//! its tensors: the header, then the key-value section, keeping the keys a
//! vocabulary needs (`tokenizer.ggml.*`) and stepping over the rest.
//!
//! A GGUF file is a little-endian header (`GGUF`, a version, the tensor
//! and key counts), the keys (a length-prefixed name, a type tag, a value:
//! a number, a string, or an array of either), the tensor descriptions and
//! then the tensor data, which is most of the file. Only the first two
//! parts are read, through a buffer, never mapped: a model of several
//! gigabytes costs the few megabytes of its vocabulary, and a file that
//! shrinks while it is read gives an error instead of a `SIGBUS`.
//!
//! Every count and length in the file is checked against the bytes left
//! before anything is allocated for it, so a hostile file (a truncated
//! one, or one claiming 2^60 tokens) gets an error and costs at most
//! memory proportional to its size.

use std::io::{BufReader, Read, Seek};

use crate::error::{Error, Result};

/// The versions read: 2 and 3 (since 2023; version 1 used 32-bit counts).
const VERSIONS: [u32; 2] = [2, 3];

/// Longest key name: the format's own limit.
const MAX_KEY_BYTES: u64 = 65_535;

/// Arrays inside arrays are stepped over to this depth.
const MAX_NESTING: u32 = 4;

/// Most elements of an array kept (the token list and its types: a
/// vocabulary's limit), and longest string kept: past them a value is
/// refused before anything is allocated for it, whatever the file's size.
const MAX_KEPT_ITEMS: u64 = super::MAX_VOCAB_SIZE as u64;
const MAX_KEPT_STRING: u64 = super::MAX_TOKEN_BYTES as u64;

/// A value kept from the file.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(Vec<u8>),
    /// An array of strings, concatenated: string `i` is
    /// `data[ends[i - 1]..ends[i]]`.
    Strings {
        data: Vec<u8>,
        ends: Vec<usize>,
    },
    Ints(Vec<i128>),
    /// Any other array (floats, arrays of arrays): stepped over.
    OtherArray,
}

impl Value {
    pub(super) fn as_int(&self) -> Option<i128> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub(super) fn as_str(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// The kept keys, in file order.
pub(super) struct Metadata {
    pub(super) entries: Vec<(String, Value)>,
}

impl Metadata {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Type tags of the format.
mod tag {
    pub const U8: u32 = 0;
    pub const I8: u32 = 1;
    pub const U16: u32 = 2;
    pub const I16: u32 = 3;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
    pub const I64: u32 = 11;
    pub const F64: u32 = 12;
}

/// Bytes of one value of a fixed-size type, or `None` for strings and
/// arrays (and unknown tags).
fn fixed_size(t: u32) -> Option<u64> {
    Some(match t {
        tag::U8 | tag::I8 | tag::BOOL => 1,
        tag::U16 | tag::I16 => 2,
        tag::U32 | tag::I32 | tag::F32 => 4,
        tag::U64 | tag::I64 | tag::F64 => 8,
        _ => return None,
    })
}

/// Reads the metadata of the GGUF file `input` of `len` bytes, keeping the
/// keys for which `keep` is true. An [`Io`](crate::error::ErrorKind::Io)
/// error for what is not a GGUF file or is cut short,
/// [`Unsupported`](crate::error::ErrorKind::Unsupported) for a version
/// not read here.
pub(super) fn read_metadata<R: Read + Seek>(
    input: R,
    len: u64,
    keep: impl Fn(&str) -> bool,
) -> Result<Metadata> {
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 20, input),
        pos: 0,
        len,
    };
    let magic = r.array::<4>()?;
    if &magic != b"GGUF" {
        return Err(Error::io("not a GGUF file (it does not start with `GGUF`)"));
    }
    let version = r.u32()?;
    if version == 1 {
        return Err(Error::unsupported(
            "GGUF version 1 (before August 2023) is not supported; convert the model again",
        ));
    }
    if !VERSIONS.contains(&version) {
        return Err(Error::unsupported(format!(
            "GGUF version {version} is not supported (versions 2 and 3 are; a big-endian file \
             reads as a huge version)"
        )));
    }
    let _tensors = r.u64()?;
    let keys = r.u64()?;
    // A key takes at least its length (8), a type (4) and one byte.
    r.check_count(keys, 13, "keys")?;
    let mut entries = Vec::new();
    for _ in 0..keys {
        let name_len = r.u64()?;
        if name_len > MAX_KEY_BYTES {
            return Err(r.malformed(format!("a key name of {name_len} bytes")));
        }
        let name = r.bytes(name_len)?;
        let name =
            String::from_utf8(name).map_err(|_| r.malformed("a key name that is not UTF-8"))?;
        let t = r.u32()?;
        if keep(&name) {
            let value = r.value(t)?;
            entries.push((name, value));
        } else {
            r.skip_value(t, 0)?;
        }
    }
    Ok(Metadata { entries })
}

/// A bounded reader: `pos` bytes read of the `len` the file has.
struct Reader<R> {
    inner: BufReader<R>,
    pos: u64,
    len: u64,
}

impl<R: Read + Seek> Reader<R> {
    /// The file is malformed: `what`, at the byte read up to.
    fn malformed(&self, what: impl std::fmt::Display) -> Error {
        Error::io(format!(
            "not a valid GGUF file: {what} at byte {}",
            self.pos
        ))
    }

    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    /// An error unless `count` items of at least `each` bytes fit in what
    /// is left.
    fn check_count(&self, count: u64, each: u64, what: &str) -> Result<()> {
        if count.checked_mul(each).is_none_or(|n| n > self.left()) {
            return Err(self.malformed(format!(
                "{count} {what} in {} bytes left (cut short or corrupt)",
                self.left()
            )));
        }
        Ok(())
    }

    /// A limit error past `max` of a value that would be kept.
    fn check_kept(&self, n: u64, max: u64, what: &str) -> Result<()> {
        if n > max {
            return Err(Error::limit(format!(
                "{n} {what} at byte {} of the GGUF file, more than the limit of {max}",
                self.pos
            )));
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        self.fill(&mut out)?;
        Ok(out)
    }

    fn fill(&mut self, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 > self.left() {
            return Err(self.malformed("the file ends early"));
        }
        self.inner.read_exact(out).map_err(|e| {
            Error::io(format!(
                "cannot read the GGUF file at byte {}: {e}",
                self.pos
            ))
        })?;
        self.pos += out.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn bytes(&mut self, n: u64) -> Result<Vec<u8>> {
        if n > self.left() {
            return Err(self.malformed(format!("{n} bytes past the end of the file")));
        }
        let mut out = vec![0u8; n as usize];
        self.fill(&mut out)?;
        Ok(out)
    }

    fn skip(&mut self, n: u64) -> Result<()> {
        if n > self.left() {
            return Err(self.malformed(format!("{n} bytes past the end of the file")));
        }
        // Within the buffer this moves a cursor; past it, one seek.
        let mut left = n;
        while left > 0 {
            let step = left.min(i64::MAX as u64);
            self.inner.seek_relative(step as i64).map_err(|e| {
                Error::io(format!(
                    "cannot read the GGUF file at byte {}: {e}",
                    self.pos
                ))
            })?;
            left -= step;
        }
        self.pos += n;
        Ok(())
    }

    /// One number of fixed-size type `t`.
    fn scalar(&mut self, t: u32) -> Result<Value> {
        Ok(match t {
            tag::U8 => Value::Int(self.array::<1>()?[0] as i128),
            tag::I8 => Value::Int(self.array::<1>()?[0] as i8 as i128),
            tag::U16 => Value::Int(u16::from_le_bytes(self.array()?) as i128),
            tag::I16 => Value::Int(i16::from_le_bytes(self.array()?) as i128),
            tag::U32 => Value::Int(self.u32()? as i128),
            tag::I32 => Value::Int(i32::from_le_bytes(self.array()?) as i128),
            tag::U64 => Value::Int(self.u64()? as i128),
            tag::I64 => Value::Int(i64::from_le_bytes(self.array()?) as i128),
            tag::F32 => Value::Float(f32::from_le_bytes(self.array()?) as f64),
            tag::F64 => Value::Float(f64::from_le_bytes(self.array()?)),
            tag::BOOL => Value::Bool(self.array::<1>()?[0] != 0),
            _ => return Err(self.malformed(format!("unknown value type {t}"))),
        })
    }

    fn value(&mut self, t: u32) -> Result<Value> {
        match t {
            tag::STRING => {
                let n = self.u64()?;
                self.check_count(n, 1, "bytes in a string")?;
                self.check_kept(n, MAX_KEPT_STRING, "bytes in a string")?;
                Ok(Value::Str(self.bytes(n)?))
            }
            tag::ARRAY => {
                let element = self.u32()?;
                let count = self.u64()?;
                // The arrays kept: strings, and integers or booleans.
                let least = match element {
                    tag::STRING => Some(8),
                    tag::F32 | tag::F64 => None,
                    t => fixed_size(t),
                };
                match least {
                    Some(least) => {
                        // Past the file's end first (a corrupt file), then
                        // past what is kept.
                        self.check_count(count, least, "array elements")?;
                        self.check_kept(count, MAX_KEPT_ITEMS, "elements in an array")?;
                    }
                    None => {
                        self.skip_array(element, count, 1)?;
                        return Ok(Value::OtherArray);
                    }
                }
                match element {
                    tag::STRING => {
                        let mut data = Vec::new();
                        let mut ends = Vec::with_capacity(count as usize);
                        for _ in 0..count {
                            let n = self.u64()?;
                            if n > self.left() {
                                return Err(self.malformed(format!("a string of {n} bytes")));
                            }
                            self.check_kept(n, MAX_KEPT_STRING, "bytes in a string")?;
                            let start = data.len();
                            data.resize(start + n as usize, 0);
                            self.fill(&mut data[start..])?;
                            ends.push(data.len());
                        }
                        Ok(Value::Strings { data, ends })
                    }
                    t => {
                        let mut out = Vec::with_capacity(count as usize);
                        for _ in 0..count {
                            match self.scalar(t)? {
                                Value::Int(i) => out.push(i),
                                Value::Bool(b) => out.push(b as i128),
                                _ => unreachable!("integer and boolean tags read as such"),
                            }
                        }
                        Ok(Value::Ints(out))
                    }
                }
            }
            _ => self.scalar(t),
        }
    }

    fn skip_value(&mut self, t: u32, depth: u32) -> Result<()> {
        match t {
            tag::STRING => {
                let n = self.u64()?;
                self.skip(n)
            }
            tag::ARRAY => {
                let element = self.u32()?;
                let count = self.u64()?;
                self.skip_array(element, count, depth + 1)
            }
            _ => match fixed_size(t) {
                Some(n) => self.skip(n),
                None => Err(self.malformed(format!("unknown value type {t}"))),
            },
        }
    }

    fn skip_array(&mut self, element: u32, count: u64, depth: u32) -> Result<()> {
        if depth > MAX_NESTING {
            return Err(self.malformed(format!("arrays nested more than {MAX_NESTING} deep")));
        }
        if let Some(size) = fixed_size(element) {
            self.check_count(count, size, "numbers")?;
            return self.skip(count * size);
        }
        // A string takes at least its length, an array its type and count.
        let least = if element == tag::ARRAY { 12 } else { 8 };
        self.check_count(count, least, "array elements")?;
        for _ in 0..count {
            self.skip_value(element, depth)?;
        }
        Ok(())
    }
}

/// A GGUF file's bytes, for tests: `keys` of (name, type tag, encoded
/// value).
#[cfg(test)]
pub(super) fn encode(version: u32, keys: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(version.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend((keys.len() as u64).to_le_bytes());
    for (name, t, value) in keys {
        out.extend((name.len() as u64).to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(t.to_le_bytes());
        out.extend(value);
    }
    out
}

/// Encoders of values, for tests.
#[cfg(test)]
pub(super) mod enc {
    pub fn string(s: &[u8]) -> Vec<u8> {
        let mut out = (s.len() as u64).to_le_bytes().to_vec();
        out.extend(s);
        out
    }

    pub fn strings(items: &[&[u8]]) -> Vec<u8> {
        let mut out = super::tag::STRING.to_le_bytes().to_vec();
        out.extend((items.len() as u64).to_le_bytes());
        for s in items {
            out.extend(string(s));
        }
        out
    }

    pub fn i32s(items: &[i32]) -> Vec<u8> {
        let mut out = super::tag::I32.to_le_bytes().to_vec();
        out.extend((items.len() as u64).to_le_bytes());
        for i in items {
            out.extend(i.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::io::Cursor;

    fn read(bytes: &[u8]) -> Result<Metadata> {
        read_metadata(Cursor::new(bytes), bytes.len() as u64, |k| {
            k.starts_with("keep.")
        })
    }

    #[test]
    fn keeps_the_chosen_keys_and_steps_over_the_rest() {
        let file = encode(
            3,
            &[
                ("skip.s", tag::STRING, enc::string(b"ignored")),
                ("keep.s", tag::STRING, enc::string(b"llama")),
                ("skip.f", tag::F32, 1.5f32.to_le_bytes().to_vec()),
                ("keep.u", tag::U32, 7u32.to_le_bytes().to_vec()),
                ("skip.a", tag::ARRAY, enc::strings(&[b"x", b"yz"])),
                ("keep.a", tag::ARRAY, enc::strings(&[b"", b"ab", b"\xff"])),
                ("keep.t", tag::ARRAY, enc::i32s(&[1, -3, 6])),
            ],
        );
        let m = read(&file).unwrap();
        let names: Vec<&str> = m.entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["keep.s", "keep.u", "keep.a", "keep.t"]);
        assert_eq!(m.get("keep.s").unwrap().as_str(), Some(&b"llama"[..]));
        assert_eq!(m.get("keep.u").unwrap().as_int(), Some(7));
        assert_eq!(
            m.get("keep.a"),
            Some(&Value::Strings {
                data: b"ab\xff".to_vec(),
                ends: vec![0, 2, 3]
            })
        );
        assert_eq!(m.get("keep.t"), Some(&Value::Ints(vec![1, -3, 6])));
    }

    #[test]
    fn hostile_files_are_errors_without_large_allocations() {
        let good = encode(
            3,
            &[
                ("keep.a", tag::ARRAY, enc::strings(&[b"one", b"two"])),
                ("keep.t", tag::ARRAY, enc::i32s(&[1, 2])),
            ],
        );
        // Every truncation is an error, never a panic.
        for cut in 0..good.len() {
            assert!(read(&good[..cut]).is_err(), "cut at {cut}");
        }
        // Counts far past the file's size are refused before allocating.
        let huge = |t: u32, count: u64| {
            let mut v = t.to_le_bytes().to_vec();
            v.extend(count.to_le_bytes());
            encode(3, &[("keep.a", tag::ARRAY, v)])
        };
        for t in [tag::STRING, tag::I32, tag::U8, tag::ARRAY, tag::F32] {
            let e = read(&huge(t, 1 << 60)).err().expect("refused");
            assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        }
        let e = read(&encode(
            3,
            &[("keep.s", tag::STRING, u64::MAX.to_le_bytes().to_vec())],
        ))
        .err()
        .expect("refused");
        assert_eq!(e.kind(), ErrorKind::Io);
        // Kept values past the vocabulary's limits, in a file large enough
        // to hold them by size: refused as limits, not allocated.
        let mut long = tag::STRING.to_le_bytes().to_vec();
        long.extend(1u64.to_le_bytes());
        long.extend((1u64 << 17).to_le_bytes());
        long.extend(vec![b'x'; 1 << 17]);
        let e = read(&encode(3, &[("keep.a", tag::ARRAY, long)]))
            .err()
            .expect("refused");
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        let mut bytes = tag::U8.to_le_bytes().to_vec();
        bytes.extend((MAX_KEPT_ITEMS + 1).to_le_bytes());
        let mut file = encode(3, &[("keep.t", tag::ARRAY, bytes)]);
        file.resize(file.len() + MAX_KEPT_ITEMS as usize + 1, 0);
        let e = read(&file).err().expect("refused");
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        let mut many_keys = encode(3, &[]);
        many_keys[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read(&many_keys).is_err());
        // Nesting, unknown tags, versions, magic.
        let mut nested = Vec::new();
        for _ in 0..8 {
            nested.extend(tag::ARRAY.to_le_bytes());
            nested.extend(1u64.to_le_bytes());
        }
        nested.extend(tag::U8.to_le_bytes());
        nested.extend(1u64.to_le_bytes());
        nested.push(0);
        assert!(read(&encode(3, &[("skip.n", tag::ARRAY, nested)])).is_err());
        assert!(read(&encode(3, &[("keep.x", 13, vec![0; 8])])).is_err());
        let e = read(&encode(1, &[])).err().expect("refused");
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(read(&encode(4, &[])).is_err());
        assert!(read(b"GGML\x03\0\0\0").is_err());
    }
}
