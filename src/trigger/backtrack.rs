//! Where a trigger pattern's match starts: the match `std::regex_search`
//! (or `std::regex_match`) would report, found once, when a trigger fires.
//!
//! Whether a pattern matches the output at all is decided incrementally by
//! a DFA ([`super::Detector`]); this module answers the question a DFA
//! cannot: *which* match, by ECMAScript's priority rules (leftmost start;
//! then alternatives in order, greedy and lazy quantifiers, each loop
//! iteration clearing the groups inside it, lookaheads atomic), and where
//! its capturing groups are. A pattern becomes a small program
//! ([`Program`]) run by a backtracking search that never visits the same
//! (instruction, position) twice: without backreferences (which the DFA
//! already refuses) whether a path succeeds from there does not depend on
//! how it got there, so the first success is the one a plain backtracker
//! finds, in `O(instructions x text)` steps at most (lookaheads are
//! searched again at each position they are tested at; [`MAX_STEPS`] bounds
//! the whole).
//!
//! The text is a sequence of code points (the output decoded as UTF-8, an
//! invalid sequence as U+FFFD), the same characters the DFA read.

use crate::error::{Error, Result};
use crate::ir::CharClass;
use crate::regex::Node;

/// Most instructions a program may have (counted repetitions are copied).
pub const MAX_INSTRUCTIONS: usize = 100_000;

/// Most (instruction, position) pairs one search may track, a bit each:
/// 32 MiB.
pub const MAX_VISITED: usize = 1 << 28;

/// Most steps one search may take, lookaheads included (a lookahead is
/// searched again from every position it is tested at): a fraction of a
/// second. A pattern whose search needs more over the output it has to
/// read is refused where it fires (a limit error).
pub const MAX_STEPS: usize = 1 << 26;

#[derive(Clone, Debug)]
enum Inst {
    /// One character of the class (an index into [`Program::classes`]).
    Char(u32),
    /// Try the first target, then the second.
    Split(u32, u32),
    Jump(u32),
    /// Record the position in a capture slot.
    Save(u32),
    /// Forget the capture slots `lo..hi` (a loop iteration starts).
    Clear(u32, u32),
    /// `^`: the start of the text.
    Start,
    /// `$`: the end of the text.
    End,
    /// `\b` (`\B` when negated).
    WordBoundary {
        negated: bool,
    },
    /// `(?=...)` / `(?!...)`: sub-program `prog`, whose groups own the
    /// capture slots `lo..hi`.
    Look {
        prog: u32,
        negated: bool,
        lo: u32,
        hi: u32,
    },
    Match,
}

/// One compiled pattern (or lookahead body).
#[derive(Clone, Debug)]
struct Code {
    insts: Vec<Inst>,
}

/// A compiled trigger pattern: the main program, its lookahead bodies and
/// its character classes.
#[derive(Clone, Debug)]
pub struct Program {
    codes: Vec<Code>,
    classes: Vec<CharClass>,
    /// Capture slots: two per group, group 0 being the whole match.
    slots: usize,
}

/// A match found by [`Program::find`]: character positions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    /// `(start, end)` of each capturing group, `None` when it did not take
    /// part in the match.
    pub groups: Vec<Option<(usize, usize)>>,
}

impl Found {
    /// Where the lazy grammar starts: the first capturing group that
    /// matched a non-empty text, else the match's start (llama.cpp's rule).
    pub fn grammar_start(&self) -> usize {
        self.groups
            .iter()
            .flatten()
            .find(|(s, e)| e > s)
            .map_or(self.start, |&(s, _)| s)
    }
}

struct Compiler {
    codes: Vec<Code>,
    classes: Vec<CharClass>,
    size: usize,
}

/// Number of the groups inside `node`, and the smallest group number.
fn groups_in(node: &Node) -> Option<(u32, u32)> {
    fn walk(n: &Node, acc: &mut Option<(u32, u32)>) {
        match n {
            Node::Group { index, node } => {
                *acc = Some(match *acc {
                    None => (*index, *index),
                    Some((lo, hi)) => (lo.min(*index), hi.max(*index)),
                });
                walk(node, acc);
            }
            Node::Seq(v) | Node::Alt(v) => v.iter().for_each(|x| walk(x, acc)),
            Node::Repeat { node, .. } | Node::Look { node, .. } => walk(node, acc),
            _ => {}
        }
    }
    let mut acc = None;
    walk(node, &mut acc);
    acc
}

/// The capture slots of the groups inside `node` (groups are numbered in
/// the order of their opening parentheses, so they are consecutive).
fn slots_of(node: &Node) -> (u32, u32) {
    match groups_in(node) {
        Some((lo, hi)) => (2 * lo, 2 * hi + 2),
        None => (0, 0),
    }
}

impl Compiler {
    fn push(&mut self, code: &mut Vec<Inst>, inst: Inst) -> Result<u32> {
        self.size += 1;
        if self.size > MAX_INSTRUCTIONS {
            return Err(Error::limit(format!(
                "trigger pattern needs more than {MAX_INSTRUCTIONS} matcher instructions \
                 (counted repetitions are expanded)"
            )));
        }
        code.push(inst);
        Ok(code.len() as u32 - 1)
    }

    fn emit(&mut self, node: &Node, code: &mut Vec<Inst>) -> Result<()> {
        match node {
            Node::Empty => {}
            Node::Char(c) => {
                let k = match self.classes.iter().position(|x| x == c) {
                    Some(k) => k,
                    None => {
                        self.classes.push(c.clone());
                        self.classes.len() - 1
                    }
                };
                self.push(code, Inst::Char(k as u32))?;
            }
            Node::Seq(v) => {
                for x in v {
                    self.emit(x, code)?;
                }
            }
            Node::Alt(v) => {
                let mut jumps = Vec::new();
                for (k, x) in v.iter().enumerate() {
                    if k + 1 < v.len() {
                        let split = self.push(code, Inst::Split(0, 0))?;
                        self.emit(x, code)?;
                        jumps.push(self.push(code, Inst::Jump(0))?);
                        let next = code.len() as u32;
                        code[split as usize] = Inst::Split(split + 1, next);
                    } else {
                        self.emit(x, code)?;
                    }
                }
                let end = code.len() as u32;
                for j in jumps {
                    code[j as usize] = Inst::Jump(end);
                }
            }
            Node::Group { index, node } => {
                self.push(code, Inst::Save(2 * index))?;
                self.emit(node, code)?;
                self.push(code, Inst::Save(2 * index + 1))?;
            }
            Node::Start { .. } => {
                self.push(code, Inst::Start)?;
            }
            Node::End { .. } => {
                self.push(code, Inst::End)?;
            }
            Node::WordBoundary { negated, .. } => {
                self.push(code, Inst::WordBoundary { negated: *negated })?;
            }
            Node::Look {
                behind: false,
                negated,
                node,
                ..
            } => {
                let prog = self.code_of(node)?;
                let (lo, hi) = slots_of(node);
                self.push(
                    code,
                    Inst::Look {
                        prog,
                        negated: *negated,
                        lo,
                        hi,
                    },
                )?;
            }
            Node::Look { behind: true, .. } => {
                return Err(Error::unsupported(
                    "lookbehind in a trigger pattern (std::regex has none)",
                ))
            }
            Node::Repeat {
                node,
                min,
                max,
                greedy,
                ..
            } => self.emit_repeat(node, *min, *max, *greedy, code)?,
        }
        Ok(())
    }

    /// One iteration: the groups inside are forgotten first (ECMAScript's
    /// RepeatMatcher), then the body.
    fn emit_iteration(&mut self, node: &Node, code: &mut Vec<Inst>) -> Result<()> {
        let (lo, hi) = slots_of(node);
        if hi > lo {
            self.push(code, Inst::Clear(lo, hi))?;
        }
        self.emit(node, code)
    }

    fn emit_repeat(
        &mut self,
        node: &Node,
        min: u32,
        max: Option<u32>,
        greedy: bool,
        code: &mut Vec<Inst>,
    ) -> Result<()> {
        for _ in 0..min {
            self.emit_iteration(node, code)?;
        }
        let split = |body: u32, exit: u32| {
            if greedy {
                Inst::Split(body, exit)
            } else {
                Inst::Split(exit, body)
            }
        };
        match max {
            // An empty iteration comes back to the loop's split at the same
            // position, already visited: it fails, as ECMAScript's empty
            // check makes it.
            None => {
                let head = self.push(code, Inst::Split(0, 0))?;
                self.emit_iteration(node, code)?;
                self.push(code, Inst::Jump(head))?;
                let exit = code.len() as u32;
                code[head as usize] = split(head + 1, exit);
            }
            Some(max) => {
                let mut heads = Vec::new();
                for _ in min..max {
                    heads.push(self.push(code, Inst::Split(0, 0))?);
                    self.emit_iteration(node, code)?;
                }
                let exit = code.len() as u32;
                for h in heads {
                    code[h as usize] = split(h + 1, exit);
                }
            }
        }
        Ok(())
    }

    /// Compiles a lookahead body as a program of its own.
    fn code_of(&mut self, node: &Node) -> Result<u32> {
        let mut code = Vec::new();
        self.emit(node, &mut code)?;
        self.push(&mut code, Inst::Match)?;
        self.codes.push(Code { insts: code });
        Ok(self.codes.len() as u32 - 1)
    }
}

fn is_word(c: u32) -> bool {
    matches!(c, 0x30..=0x39 | 0x41..=0x5A | 0x5F | 0x61..=0x7A)
}

/// The visited (instruction, position) pairs of one search.
struct Visited {
    bits: Vec<u64>,
    width: usize,
    /// Words set since the last [`Visited::clear`] (lookahead searches
    /// reuse one set at many positions and touch little of it).
    touched: Vec<usize>,
}

impl Visited {
    fn new(insts: usize, positions: usize) -> Result<Visited> {
        let n = insts.saturating_mul(positions);
        if n > MAX_VISITED {
            return Err(Error::limit(format!(
                "finding where a trigger matched in {positions} characters needs more than \
                 {MAX_VISITED} search states"
            )));
        }
        Ok(Visited {
            bits: vec![0; n.div_ceil(64)],
            width: positions,
            touched: Vec::new(),
        })
    }

    /// Marks the pair; false when it was marked already.
    fn insert(&mut self, pc: u32, pos: usize) -> bool {
        let k = pc as usize * self.width + pos;
        let (w, b) = (k / 64, 1u64 << (k % 64));
        let word = self.bits[w];
        if word & b != 0 {
            return false;
        }
        if word == 0 {
            self.touched.push(w);
        }
        self.bits[w] = word | b;
        true
    }

    fn clear(&mut self) {
        for w in self.touched.drain(..) {
            self.bits[w] = 0;
        }
    }
}

enum Frame {
    Explore(u32, usize),
    Restore(u32, Option<usize>),
}

/// The capture slots a lookahead set, when it matched.
type LookSlots = Option<Vec<(u32, Option<usize>)>>;

/// Results of lookaheads, by (program, position).
type LookMemo = crate::util::hash::FastMap<(u32, usize), LookSlots>;

struct Search<'a> {
    program: &'a Program,
    text: &'a [u32],
    /// The first position the visited sets cover.
    base: usize,
    looks: LookMemo,
    /// One visited set per lookahead program, cleared between positions.
    look_visited: Vec<Option<Visited>>,
    /// Steps taken so far (see [`MAX_STEPS`]).
    steps: usize,
}

impl Program {
    /// Compiles a parsed pattern ([`crate::regex::parse_std_regex`]).
    pub fn new(node: &Node) -> Result<Program> {
        let groups = groups_in(node).map_or(0, |(_, hi)| hi);
        let mut c = Compiler {
            codes: vec![Code { insts: Vec::new() }],
            classes: Vec::new(),
            size: 0,
        };
        let mut main = Vec::new();
        c.push(&mut main, Inst::Save(0))?;
        c.emit(node, &mut main)?;
        c.push(&mut main, Inst::Save(1))?;
        c.push(&mut main, Inst::Match)?;
        c.codes[0] = Code { insts: main };
        Ok(Program {
            codes: c.codes,
            classes: c.classes,
            slots: 2 * (groups as usize + 1),
        })
    }

    /// The match `std::regex_search` reports in `text` (leftmost start,
    /// then ECMAScript priority), or with `whole`, the match of
    /// `std::regex_match` (the whole text). `None` when there is none.
    pub fn find(&self, text: &[u32], whole: bool) -> Result<Option<Found>> {
        self.find_from(text, 0, whole)
    }

    /// [`Self::find`] for a caller that knows no match starts before
    /// position `from`: only the text from `from - 1` on is examined (the
    /// character before is context for `\b`).
    pub fn find_from(&self, text: &[u32], from: usize, whole: bool) -> Result<Option<Found>> {
        let from = if whole { 0 } else { from.min(text.len()) };
        let base = from.saturating_sub(1);
        let mut s = Search {
            program: self,
            text,
            base,
            looks: LookMemo::default(),
            look_visited: (0..self.codes.len()).map(|_| None).collect(),
            steps: 0,
        };
        let mut slots = vec![None; self.slots];
        let positions = text.len() + 1 - base;
        let mut visited = Visited::new(self.codes[0].insts.len(), positions)?;
        let starts = if whole { 0..1 } else { from..text.len() + 1 };
        for start in starts {
            slots.iter_mut().for_each(|x| *x = None);
            if s.run(0, start, whole, &mut slots, &mut visited)? {
                let pair = |k: usize| match (slots[2 * k], slots[2 * k + 1]) {
                    (Some(a), Some(b)) => Some((a, b)),
                    _ => None,
                };
                let (start, end) = pair(0).expect("a match saves its bounds");
                return Ok(Some(Found {
                    start,
                    end,
                    groups: (1..self.slots / 2).map(pair).collect(),
                }));
            }
        }
        Ok(None)
    }

    /// Instructions of all its code (the main program and lookaheads).
    pub fn size(&self) -> usize {
        self.codes.iter().map(|c| c.insts.len()).sum()
    }

    /// Approximate heap bytes.
    pub fn memory(&self) -> usize {
        self.codes
            .iter()
            .map(|c| c.insts.len() * std::mem::size_of::<Inst>())
            .sum::<usize>()
            + self
                .classes
                .iter()
                .map(|c| c.ranges().len() * 8 + 32)
                .sum::<usize>()
    }

    /// The most characters a match examines from its start (its own and
    /// those its lookaheads read), or `None` when unbounded.
    pub fn max_span(&self) -> Option<usize> {
        self.span_of(0)
    }

    fn span_of(&self, code: usize) -> Option<usize> {
        // Longest path through the program's instructions: programs are
        // acyclic but for loops (backward jumps), which make it unbounded.
        let insts = &self.codes[code].insts;
        let mut best: Vec<Option<usize>> = vec![None; insts.len() + 1];
        best[0] = Some(0);
        let mut most = 0usize;
        for pc in 0..insts.len() {
            let Some(here) = best[pc] else { continue };
            let to = |t: u32, add: usize, best: &mut Vec<Option<usize>>| -> bool {
                if (t as usize) <= pc {
                    return false;
                }
                let v = here + add;
                let b = &mut best[t as usize];
                *b = Some(b.map_or(v, |x| x.max(v)));
                true
            };
            let ok = match &insts[pc] {
                Inst::Char(_) => to(pc as u32 + 1, 1, &mut best),
                Inst::Split(a, b) => to(*a, 0, &mut best) && to(*b, 0, &mut best),
                Inst::Jump(a) => to(*a, 0, &mut best),
                Inst::Look { prog, .. } => {
                    let inner = self.span_of(*prog as usize)?;
                    most = most.max(here + inner);
                    to(pc as u32 + 1, 0, &mut best)
                }
                Inst::Match => {
                    most = most.max(here);
                    true
                }
                // `\b` looks at the character after the position.
                Inst::WordBoundary { .. } => {
                    most = most.max(here + 1);
                    to(pc as u32 + 1, 0, &mut best)
                }
                _ => to(pc as u32 + 1, 0, &mut best),
            };
            if !ok {
                return None;
            }
        }
        Some(most)
    }
}

impl Search<'_> {
    /// Runs program `code` from `pos`; on success `slots` hold the captures.
    fn run(
        &mut self,
        code: u32,
        pos: usize,
        whole: bool,
        slots: &mut [Option<usize>],
        visited: &mut Visited,
    ) -> Result<bool> {
        let insts = &self.program.codes[code as usize].insts;
        let text = self.text;
        let mut stack = vec![Frame::Explore(0, pos)];
        while let Some(frame) = stack.pop() {
            let (mut pc, mut pos) = match frame {
                Frame::Restore(slot, old) => {
                    slots[slot as usize] = old;
                    continue;
                }
                Frame::Explore(pc, pos) => (pc, pos),
            };
            loop {
                if !visited.insert(pc, pos - self.base) {
                    break;
                }
                self.steps += 1;
                if self.steps > MAX_STEPS {
                    return Err(Error::limit(format!(
                        "finding where a trigger matched in {} characters takes more than \
                         {MAX_STEPS} search steps",
                        text.len()
                    )));
                }
                match &insts[pc as usize] {
                    Inst::Char(k) => match text.get(pos) {
                        Some(&c) if self.program.classes[*k as usize].contains(c) => {
                            pos += 1;
                            pc += 1;
                        }
                        _ => break,
                    },
                    Inst::Split(a, b) => {
                        stack.push(Frame::Explore(*b, pos));
                        pc = *a;
                    }
                    Inst::Jump(a) => pc = *a,
                    Inst::Save(slot) => {
                        stack.push(Frame::Restore(*slot, slots[*slot as usize]));
                        slots[*slot as usize] = Some(pos);
                        pc += 1;
                    }
                    Inst::Clear(lo, hi) => {
                        for slot in *lo..*hi {
                            stack.push(Frame::Restore(slot, slots[slot as usize]));
                            slots[slot as usize] = None;
                        }
                        pc += 1;
                    }
                    Inst::Start => {
                        if pos != 0 {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::End => {
                        if pos != text.len() {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::WordBoundary { negated } => {
                        let before = pos > 0 && is_word(text[pos - 1]);
                        let after = pos < text.len() && is_word(text[pos]);
                        if (before != after) == *negated {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::Look {
                        prog,
                        negated,
                        lo,
                        hi,
                    } => {
                        let (prog, negated, lo, hi) = (*prog, *negated, *lo, *hi);
                        let Some(set) = self.look(prog, pos, lo, hi)? else {
                            if negated {
                                pc += 1;
                                continue;
                            }
                            break;
                        };
                        if negated {
                            break;
                        }
                        for (slot, v) in set {
                            stack.push(Frame::Restore(slot, slots[slot as usize]));
                            slots[slot as usize] = v;
                        }
                        pc += 1;
                    }
                    Inst::Match => {
                        if whole && pos != text.len() {
                            break;
                        }
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// Lookahead body `prog` at `pos`: `Some(slots it set)` when it matches
    /// (its first match: lookaheads do not backtrack into their body).
    fn look(&mut self, prog: u32, pos: usize, lo: u32, hi: u32) -> Result<LookSlots> {
        if let Some(r) = self.looks.get(&(prog, pos)) {
            return Ok(r.clone());
        }
        let mut visited = match self.look_visited[prog as usize].take() {
            Some(v) => v,
            None => {
                let insts = self.program.codes[prog as usize].insts.len();
                Visited::new(insts, self.text.len() + 1 - self.base)?
            }
        };
        let mut slots = vec![None; self.program.slots];
        let matched = self.run(prog, pos, false, &mut slots, &mut visited);
        visited.clear();
        self.look_visited[prog as usize] = Some(visited);
        let r = matched?.then(|| (lo..hi).map(|s| (s, slots[s as usize])).collect());
        self.looks.insert((prog, pos), r.clone());
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regex::parse_std_regex;

    fn find(pattern: &str, text: &str) -> Option<(usize, usize, usize)> {
        let p = Program::new(&parse_std_regex(pattern).unwrap()).unwrap();
        let chars: Vec<u32> = text.chars().map(|c| c as u32).collect();
        let whole = pattern.starts_with('^') && pattern.ends_with('$');
        let f = match p.find(&chars, whole).unwrap() {
            Some(f) => Some(f),
            None if whole => p.find(&chars, false).unwrap(),
            None => None,
        };
        f.map(|f| (f.start, f.end, f.grammar_start()))
    }

    #[test]
    fn leftmost_then_priority() {
        assert_eq!(find("<tool_call>", "ab <tool_call> x"), Some((3, 14, 3)));
        assert_eq!(find("b|ab", "xab"), Some((1, 3, 1)));
        assert_eq!(find("a+", "baaa"), Some((1, 4, 1)));
        assert_eq!(find("a+?", "baaa"), Some((1, 2, 1)));
        assert_eq!(find("x", "abc"), None);
    }

    #[test]
    fn groups_pick_the_grammar_start() {
        // llama.cpp's old word triggers: lazy prefix, the word as group 1.
        let p = "[\\s\\S]*?(<tool_call>|\\[TOOL\\])[\\s\\S]*";
        assert_eq!(find(p, "hi [TOOL] <tool_call>"), Some((0, 21, 3)));
        // A group that matched nothing is skipped.
        assert_eq!(find("(x*)(ab)", "zab"), Some((1, 3, 1)));
        assert_eq!(find("a(x*)b", "ab"), Some((0, 2, 0)));
        assert_eq!(
            find("<\\|start\\|>assistant(\\s+to)", "<|start|>assistant  to=f"),
            Some((0, 22, 18))
        );
    }

    #[test]
    fn anchored_patterns_match_the_whole_text_first() {
        assert_eq!(find("^\\s+to$", "  to"), Some((0, 4, 0)));
        assert_eq!(find("^\\s+to$", "  to x"), None);
        assert_eq!(
            find("^[\\s\\S]*?(<f>)[\\s\\S]*$", "ab<f>c"),
            Some((0, 6, 2))
        );
    }

    #[test]
    fn lookaheads() {
        assert_eq!(find(">>>(?!all)", ">>>all >>>f"), Some((7, 10, 7)));
        assert_eq!(find(">>>(?!all)", ">>>al"), Some((0, 3, 0)));
        assert_eq!(find("a(?=(b))", "ab"), Some((0, 1, 1)));
        let muse = "(?:^|<\\|start\\|>assistant)( to=(?!self<\\|message\\|>)(?!user<\\|message\\|>)[^<]*?<\\|message\\|>)";
        assert_eq!(find(muse, " to=self<|message|>"), None);
        assert_eq!(find(muse, " to=fn<|message|>"), Some((0, 17, 0)));
    }

    #[test]
    fn loops_clear_their_groups_and_stop_on_empty_iterations() {
        assert_eq!(find("(?:(a)|b)*c", "abc"), Some((0, 3, 0)));
        let p = Program::new(&parse_std_regex("(?:(a)|b)+").unwrap()).unwrap();
        let text: Vec<u32> = "ab".chars().map(|c| c as u32).collect();
        let f = p.find(&text, false).unwrap().unwrap();
        // The last iteration read 'b': group 1 was cleared by it.
        assert_eq!(f.groups, vec![None]);
        assert_eq!(find("(a*)*b", "b"), Some((0, 1, 0)));
        assert_eq!(find("(?:a?){3}b", "ab"), Some((0, 2, 0)));
    }

    #[test]
    fn word_boundaries_and_anchors() {
        assert_eq!(find("\\bto\\b", "into to"), Some((5, 7, 5)));
        assert_eq!(find("a$", "aa"), Some((1, 2, 1)));
        assert_eq!(find("^a", "ba"), None);
    }
}
