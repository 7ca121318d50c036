//! Small end-to-end checks of the engine on hand-built IR and a toy
//! vocabulary: every mask must agree with `accept` token by token.

use std::sync::Arc;

use cgram::compile::IrOptions;
use cgram::ir::{CharClass, Expr, GrammarBuilder};
use cgram::tokensets::compile_ir;
use cgram::{Engine, Matcher, Vocab, TOKEN_SPECIAL};

fn toy_vocab() -> Arc<Engine> {
    let texts: Vec<&[u8]> = vec![
        b"a",
        b"b",
        b"ab",
        b"bb",
        b"abb",
        b"c",
        b"ba",
        b" ",
        b"{",
        b"}",
        b"\"",
        b"\",",
        b"\"}",
        b"x\"",
        b"1",
        b"12",
        b"1,",
        b",",
        b":",
        b"\": ",
        b"\xc3",
        b"\xa9",
        b"\xc3\xa9",
        b"<eos>",
        b"(",
        b")",
        b"((",
        b"))",
        b"a)",
        b"b(",
    ];
    let n = texts.len();
    let mut flags = vec![0u32; n];
    flags[n - 7] = TOKEN_SPECIAL;
    Engine::new(
        Vocab::new(
            texts.iter().map(|t| t.to_vec()).collect(),
            flags,
            vec![(n - 7) as u32],
        )
        .unwrap(),
    )
}

fn opts() -> IrOptions {
    IrOptions::new(10_000, 100_000)
}

/// Random walk: at each step the mask must equal the set of tokens that
/// `accept` takes.
fn check_walks(m0: &Matcher, steps: usize, seed: u64) {
    let engine = m0.grammar().engine().clone();
    let mut rng = seed;
    for _walk in 0..20 {
        let mut m = m0.clone();
        for _ in 0..steps {
            let mut mask = vec![0u32; engine.vocab().mask_words()];
            m.fill_mask(&mut mask).unwrap();
            let mut allowed = Vec::new();
            for t in 0..engine.vocab().len() as u32 {
                let bit = mask[(t / 32) as usize] >> (t % 32) & 1 == 1;
                let mut c = m.clone();
                let ok = c.accept(t).is_ok();
                assert_eq!(
                    bit,
                    ok,
                    "token {t} {:?}: mask {bit} accept {ok}",
                    String::from_utf8_lossy(engine.vocab().token_bytes(t))
                );
                if ok {
                    allowed.push(t);
                }
            }
            if allowed.is_empty() {
                assert!(m.is_terminated());
                break;
            }
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = allowed[(rng >> 33) as usize % allowed.len()];
            m.accept(t).unwrap();
        }
    }
}

#[test]
fn loop_then_literal() {
    let v = toy_vocab();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root");
    b.set_body(
        root,
        Expr::seq(vec![
            Expr::plus(Expr::Class(CharClass::from_ranges([(
                b'a' as u32,
                b'z' as u32,
            )]))),
            Expr::literal("b"),
        ]),
    );
    let g = compile_ir(&v, &b.finish(root), &opts()).unwrap();
    let mut m = Matcher::new(g);
    check_walks(&m, 6, 1);
    m.accept_bytes(b"ab").unwrap();
    assert!(m.is_accepting());
}

#[test]
fn recursion_and_strings() {
    let v = toy_vocab();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root");
    let s = b.add_rule("s");
    let str_ = b.add_rule("str");
    // s ::= "(" s ")" s | str | ""
    b.set_body(
        s,
        Expr::alt(vec![
            Expr::seq(vec![
                Expr::literal("("),
                Expr::Ref(s),
                Expr::literal(")"),
                Expr::Ref(s),
            ]),
            Expr::Ref(str_),
            Expr::Empty,
        ]),
    );
    // str ::= "\"" [^"]* "\""
    b.set_body(
        str_,
        Expr::seq(vec![
            Expr::literal("\""),
            Expr::star(Expr::Class(CharClass::single('"' as u32).negate())),
            Expr::literal("\""),
        ]),
    );
    b.set_body(
        root,
        Expr::seq(vec![Expr::Ref(s), Expr::optional(Expr::literal(","))]),
    );
    let g = compile_ir(&v, &b.finish(root), &opts()).unwrap();
    let m = Matcher::new(g);
    check_walks(&m, 10, 7);
}

#[test]
fn ambiguous_and_left_recursive() {
    let v = toy_vocab();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root");
    let e = b.add_rule("e");
    // e ::= e e | "a" | "ab" | "b" ; root ::= e "c"?
    b.set_body(
        e,
        Expr::alt(vec![
            Expr::seq(vec![Expr::Ref(e), Expr::Ref(e)]),
            Expr::literal("a"),
            Expr::literal("ab"),
            Expr::literal("b"),
        ]),
    );
    b.set_body(
        root,
        Expr::seq(vec![Expr::Ref(e), Expr::optional(Expr::literal("c"))]),
    );
    let g = compile_ir(&v, &b.finish(root), &opts()).unwrap();
    let m = Matcher::new(g);
    check_walks(&m, 8, 3);
}

#[test]
fn utf8_partial_tokens() {
    let v = toy_vocab();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root");
    b.set_body(
        root,
        Expr::star(Expr::Class(CharClass::from_ranges([(0xe0, 0xff)]))),
    );
    let g = compile_ir(&v, &b.finish(root), &opts()).unwrap();
    let mut m = Matcher::new(g);
    check_walks(&m, 5, 5);
    let c3 = 20; // "\xc3"
    m.accept(c3).unwrap();
    assert!(!m.is_accepting());
    m.accept(21).unwrap(); // "\xa9"
    assert!(m.is_accepting());
    m.rollback(2).unwrap();
    assert!(m.is_accepting());
    assert_eq!(m.num_tokens(), 0);
}

#[test]
fn counting_lexeme_shares_token_sets_exactly() {
    // 40 DFA states that differ only near the bound: token sets are shared
    // between states no token can tell apart, and must stay exact near it.
    let v = toy_vocab();
    let mut b = GrammarBuilder::new();
    let root = b.add_rule("root");
    b.set_body(
        root,
        Expr::seq(vec![
            Expr::literal("("),
            Expr::repeat(
                Expr::Class(CharClass::from_ranges([(b'a' as u32, b'b' as u32)])),
                0,
                Some(40),
            ),
            Expr::literal(")"),
        ]),
    );
    let g = compile_ir(&v, &b.finish(root), &opts()).unwrap();
    let m = Matcher::new(g);
    check_walks(&m, 45, 11);
}
