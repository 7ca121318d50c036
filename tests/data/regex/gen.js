#!/usr/bin/env node
// Ground truth for tests/regex_ecma.rs from a real ECMA-262 engine.
//
// For every pattern and string it records
//   search: new RegExp(pattern, flags).test(s)      (JSON Schema `pattern`)
//   full:   new RegExp('^(?:' + pattern + ')$', flags).test(s)
// with flags 'u'; a pattern that is a syntax error with 'u' is retried
// without flags (the legacy grammar cgram falls back to) and marked so;
// `flags: null` means JavaScript rejects it both ways.
//
// Inputs: the hand-written cases below, the JSON Schema Test Suite's
// pattern tests, and maskbench_patterns.json (from extract_maskbench.py),
// whose strings are extended with mutations.
//
// Usage: node gen.js [JSON_SCHEMA_TEST_SUITE_DIR] > cases.json
// (default: the vendored ../json-schema-test-suite/tests)

'use strict';
const fs = require('fs');
const path = require('path');

const SUITE = process.argv[2] || path.join(__dirname, '..', 'json-schema-test-suite', 'tests');

// [pattern, [strings...]]
const hand = [
  // Literals and escapes.
  ['abc', ['abc', 'xabcx', 'ab', '']],
  ['\\n\\r\\t\\v\\f', ['\n\r\t\v\f', 'nrtvf']],
  ['^\\0$', ['\0', '0', '']],
  ['^\\cJ\\cj$', ['\n\n', 'cJcj']],
  ['^\\x41\\u0042\\u{43}$', ['ABC', 'abc']],
  ['^\\u{1F600}$', ['😀', '\u{1F601}', '']],
  ['^\\uD83D\\uDE00$', ['😀', '']],
  ['^\\uD83D$', ['😀', '']],
  ['^\\/\\.\\*\\\\\\^\\$\\{\\}\\|\\(\\)\\[\\]\\?\\+$', ['/.*\\^${}|()[]?+', '']],
  ['^a\\-b$', ['a-b']],
  ['^\\_$', ['_']],
  ['^\\a$', ['a', '\\a']],
  ['^\\8$', ['8']],
  ['^\\12$', ['\n', '12']],
  ['^\\c$', ['\\c', 'c']],
  ['^\\xg$', ['xg']],
  ['a{', ['a{', 'a']],
  ['a{,3}', ['a{,3}', 'aaa']],
  ['}', ['}', '']],
  [']', [']', '']],
  ['x{1}}', ['x}', 'x']],
  // Dot.
  ['^.$', ['a', '😀', '\n', '\r', '\u2028', '\u2029', '\u0085', '']],
  ['^..$', ['😀', 'ab']],
  ['a.c', ['abc', 'a\nc', 'a😀c']],
  // Classes.
  ['^[abc]+$', ['abcba', 'abd', '']],
  ['^[^abc]$', ['d', 'a', '\n', '😀']],
  ['^[a-z0-9]$', ['m', '5', 'M', '-']],
  ['^[\\d\\s]+$', ['1 2\t3', '1a']],
  ['^[^\\d]$', ['a', '1']],
  ['^[\\b]$', ['\b', 'b']],
  ['^[-a]$', ['-', 'a', 'b']],
  ['^[a-]$', ['-', 'a']],
  ['^[\\-]$', ['-']],
  ['^[]$', ['', 'a']],
  ['[]', ['', 'a']],
  ['^[^]$', ['\n', 'a', '']],
  ['^[\\u{1F600}-\\u{1F64F}]$', ['😀', '🙏', '🚀']],
  ['^[😀-😂]$', ['😁', '😃']],
  ['^[\\uD83D\\uDE00-\\uD83D\\uDE02]$', ['😁', '😃']],
  ['^[\\w-]+$', ['a-b_1', 'a b']],
  ['^[\\w-.]+$', ['a-b.c', 'a b']],
  ['^[a\\-z]+$', ['-az', 'b']],
  ['^[\\s\\S]$', ['\n', 'a']],
  ['^[.]$', ['.', 'a']],
  ['^[$^]$', ['$', '^', 'a']],
  ['^[\\^]$', ['^']],
  ['^[z-a]$', ['a']],
  ['^[\\d-z]$', ['5', '-', 'z', 'a']],
  ['^[\\0-\\x1f]$', ['\0', '\x1f', ' ']],
  ['^[\\cA-\\cZ]$', ['\x01', '\x1a', 'A']],
  ['^[\\uD800-\\uDFFF]$', ['a', '😀']],
  ['^[\\u0000-\\uFFFF]$', ['a', '😀', '\uffff']],
  // Class escapes.
  ['^\\d+$', ['0123456789', '٣', '১', 'a']],
  ['^\\D$', ['a', '٣', '1']],
  ['^\\w+$', ['azAZ09_', 'é', 'ß', 'K']],
  ['^\\W$', ['é', 'a', ' ']],
  ['^\\s$', [' ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u180e', '\u200b', '\u0085', 'a']],
  ['^\\S$', [' ', 'a', '\u00a0', '\u0085', '\u200b']],
  // Unicode properties.
  ['^\\p{L}+$', ['abcÉß', 'a1', 'ΩЖ中']],
  ['^\\p{Lu}$', ['A', 'É', 'a', 'Ω']],
  ['^\\P{L}$', ['1', 'a', ' ']],
  ['^\\p{Letter}$', ['a', '1']],
  ['^\\p{Script=Greek}+$', ['αβγ', 'abc']],
  ['^\\p{sc=Cyrl}$', ['Ж', 'a']],
  ['^\\p{scx=Hira}$', ['あ', 'ア', 'ー']],
  ['^\\p{Script_Extensions=Latin}$', ['a', 'α']],
  ['^\\p{Nd}+$', ['123', '١٢٣', '১', 'a']],
  ['^\\p{digit}+$', ['42', '৪২', '-%#']],
  ['^\\p{Alphabetic}$', ['a', 'Ⅻ', '1']],
  ['^\\p{White_Space}$', [' ', '\u0085', 'a']],
  ['^\\p{Any}$', ['a', '😀', '\n']],
  ['^\\p{ASCII}$', ['a', '\x7f', 'é']],
  ['^\\p{Emoji}$', ['😀', '1', 'a', '#']],
  ['^[\\p{L}\\p{N}]+$', ['a1é٣', 'a b']],
  ['^[^\\p{L}]$', ['1', 'a']],
  ['^\\p{gc=Zs}$', [' ', '\u3000', '\t']],
  ['^\\p{General_Category=Nd}$', ['5', 'a']],
  ['^\\p{Lowercase}$', ['a', 'A', 'ª']],
  ['^\\p{Punct}$', ['!']],
  ['^\\p{letter}$', ['a']],
  ['^\\p{Script=greek}$', ['α']],
  ['^\\p{Greek}$', ['α']],
  ['\\p{Foo}', ['p{Foo}']],
  ['^\\p{L}$', ['a']],
  // Quantifiers.
  ['^a*$', ['', 'aaa', 'ab']],
  ['^a+?$', ['', 'a', 'aa']],
  ['^a??b$', ['b', 'ab', 'aab']],
  ['^a{2}$', ['a', 'aa', 'aaa']],
  ['^a{2,}$', ['a', 'aa', 'aaaaa']],
  ['^a{2,3}$', ['a', 'aa', 'aaa', 'aaaa']],
  ['^a{0}$', ['', 'a']],
  ['^a{0,0}b$', ['b', 'ab']],
  ['^(ab){1,2}$', ['ab', 'abab', 'ababab', '']],
  ['^(?:a|bc){2,3}$', ['aa', 'abc', 'bcbcbc', 'a', 'aaaa']],
  ['^(a*)*$', ['', 'aaa', 'b']],
  ['^(a*)+b$', ['b', 'aab']],
  ['^(?:a?){3}$', ['', 'a', 'aaa', 'aaaa']],
  ['^a{3,2}$', ['aaa']],
  ['a**', ['a']],
  ['*a', ['a']],
  ['a{2}{3}', ['aaaaaa']],
  ['^x{1000}$', ['x'.repeat(1000), 'x'.repeat(999)]],
  // Groups and alternation.
  ['^(a)(?:b)(?<n>c)$', ['abc', 'ab']],
  ['^a|b|$', ['a', 'b', '', 'c', 'ca']],
  ['|a', ['', 'b']],
  ['^(|a)b$', ['b', 'ab', 'aab']],
  ['^(?:)$', ['', 'a']],
  ['()', ['', 'x']],
  ['(', ['(']],
  [')', [')']],
  ['(?:a', ['a']],
  ['(?i)a', ['a']],
  ['(?P<n>a)', ['a']],
  ['(?<n>a)(?<n>b)', ['ab']],
  ['(?<1n>a)', ['a']],
  ['(?<$n_1>a)b', ['ab']],
  ['(?<é>a)', ['a']],
  // Anchors.
  ['^', ['', 'a']],
  ['$', ['', 'a']],
  ['^$', ['', 'a', '\n']],
  ['a^', ['a', '']],
  ['$a', ['a']],
  ['a^b', ['ab', 'a^b', 'a\nb']],
  ['^a|b$', ['a', 'ab', 'ba', 'xb', 'bx', 'xa']],
  ['(^|x)y', ['y', 'xy', 'zy', 'zxy', 'yz']],
  ['y($|x)', ['y', 'yx', 'yz', 'zyx']],
  ['^(a|^)*b$', ['b', 'ab', 'aab', 'ba']],
  ['(a|^)+b', ['b', 'ab', 'cb', 'c']],
  ['^*', ['']],
  ['$+', ['']],
  ['a$|^b', ['a', 'ba', 'ab', 'b', 'xb']],
  ['(?:^)+a', ['a', 'ba']],
  ['x(?:$)?y', ['xy', 'x']],
  ['(x$)*y', ['y', 'xy']],
  ['(?:x|$){2}', ['', 'x', 'xx', 'ax', 'xa']],
  ['^(?:a|$)+$', ['', 'a', 'aa', 'ab']],
  ['(^a|b)c', ['ac', 'bc', 'xac', 'xbc', 'c']],
  ['(^[^5]*$)|7', ['123', '', '575', '55']],
  ['^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$', ['', 'a/b', '/a/..', 'a/', '..//', 'A', 'a/.b']],
  ['(a$|b)+', ['a', 'ba', 'bab', 'ab', 'aa']],
  ['((^a)|b)+c', ['ac', 'abc', 'bbc', 'xac', 'abac']],
  // Word boundaries.
  ['\\bcat\\b', ['cat', 'a cat.', 'cats', 'bobcat', 'CAT']],
  ['\\Bcat', ['bobcat', 'cat', ' cat']],
  ['cat\\B', ['cats', 'cat', 'cat ']],
  ['^\\b\\w+\\b$', ['abc', '', ' a']],
  ['^\\b', ['a', ' ', '']],
  ['\\b$', ['a', 'a ', '']],
  ['(\\b|x)y', ['y', 'xy', 'ay', 'a y', 'axy']],
  ['a\\b\\b', ['a', 'ab', 'a.']],
  ['\\b.\\b', ['a', '.', 'ab', ' a ']],
  ['\\B\\B', ['', 'a', 'ab', '  ']],
  ['^(?:\\ba)+$', ['a', 'aa', '']],
  ['^(a\\b)*$', ['', 'a', 'aa']],
  ['^(?:a\\b|b)*$', ['a', 'ba', 'ab', 'bb']],
  ['\\b[éa]', ['é', 'xé', 'a', 'xa']],
  ['\\b', ['', ' ', 'a', '-']],
  ['\\B', ['', ' ', 'a', 'ab']],
  ['^\\b$', ['']],
  ['^\\B$', ['', 'a']],
  ['(\\b\\w+\\b ?)+$', ['ab cd', 'x', ' ']],
  ['\\b\\d{3}\\b', ['123', 'a123', '1234', 'x 123 y']],
  ['^(?:\\b\\w\\b){2}$', ['ab', 'a']],
  ['\\b(?:\\w+\\b\\W*){2,3}$', ['a b', 'a b c d', 'a']],
  ['a\\b{2}', ['a']],
  ['[\\b]', ['\b', 'b']],
  // Lookarounds.
  ['(?=a)', ['a', 'ba', 'b', '']],
  ['(?=a)a', ['a', 'b']],
  ['(?=a)b', ['ab', 'b']],
  ['(?!a)b', ['b', 'ab']],
  ['a(?=b)', ['ab', 'a', 'ac']],
  ['a(?!b)', ['ab', 'a', 'ac', 'aba']],
  ['(?<=a)b', ['ab', 'b', 'cb']],
  ['(?<!a)b', ['ab', 'b', 'cb', 'abb']],
  ['^(?=.*\\d)(?=.*[A-Z]).{6,}$', ['Abc123', 'abc123', 'ABCDEF1', 'A1']],
  ['^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d)(?=.*[@$!%*?&])[A-Za-z\\d@$!%*?&]{8,}$', ['Passw0rd!', 'password', 'PASSW0RD!', 'Pa0!']],
  ['^(?!.*\\s).+$', ['abc', 'a b', '']],
  ['^((?!ab).)*$', ['', 'a', 'b', 'ba', 'ab', 'xaby']],
  ['^(?:(?!ab).)+$', ['', 'a', 'ab']],
  ['((?!ab).)*$', ['', 'ab']],
  ['^(?:a(?!b))*$', ['', 'a', 'aa', 'ab', 'aab']],
  ['x((?!ab).)*$', ['x', 'xab', 'xa', 'abx']],
  ['(?=(a+))', ['a', 'b']],
  ['(?=a|b)c', ['c', 'ac']],
  ['(?!a|b)c', ['c', 'ac']],
  ['(?<=^)a', ['a', 'ba']],
  ['(?<=\\b)a', ['a', 'ba', ' a']],
  ['(?=\\b)a', ['a', 'ba']],
  ['(?=$)', ['', 'a']],
  ['a(?=$)', ['a', 'ab']],
  ['(?<=a|bc)d', ['ad', 'bcd', 'cd']],
  ['(?<!^)a', ['a', 'ba']],
  ['\\b(?=a)', ['a', 'ba', ' a']],
  ['(?=a\\b)a', ['a', 'ab', 'a b']],
  ['(?=(?=a)a)a', ['a', 'b']],
  ['(?<=(?<=a)b)c', ['abc', 'bc', 'xbc']],
  ['(?=(?!a)b)', ['b', 'a', '']],
  ['(?!(?!a))a', ['a', 'b']],
  ['^(?!pattern$).*$', ['pattern', 'patterns', '']],
  ['^(?!io\\.papermc\\.)([a-zA-Z_$][a-zA-Z\\d_$]*\\.)*[a-zA-Z_$][a-zA-Z\\d_$]*$', ['io.papermc.x', 'io.paper', 'a.b.c', 'a..b']],
  ['^([\\da-z](?:(?!.*--)[\\da-z-]*[\\da-z])?)$', ['a', 'a-b', 'a--b', '-a', 'a-']],
  ['^(?!.*\\/)^(.*[^.]+.*)$', ['a.b', 'a/b', '...', '']],
  ['(?=x)a(?<=y)', ['a']],
  ['^((?!foo)[a-z])*\\.json$', ['abc.json', 'afoob.json', 'fo.json', '.json', 'foo.json', 'ab.jsonx']],
  ['((?!ab)[a-z])*-', ['-', 'xab-', 'xa-b', 'b-']],
  [',((?<!a)[^,])*$', [',', ',b', 'a,b', ',ab', ',ba']],
  ['^x((?<!xb)[a-z])*$', ['x', 'xa', 'xb', 'xab', 'xba']],
  ['^((?!foo).)*\\.json$', ['abc.json']],
  ['^(?:[a-z](?!-))*-', ['ab-', 'a-', '-']],
  ['(?=\\w*x)a+(?<=y\\w*)', ['ax']],
  ['(?=a)*b', ['b', 'ab']],
  ['(?=a){2}a', ['a', 'b']],
  ['(?<=a)*b', ['b']],
  ['(?=.*a)(?=.*b)', ['ab', 'ba', 'a', '']],
  ['(?<![a-z])\\d+(?![a-z])', ['12', 'a12', '12a', 'a1 2']],
  ['^(?:(?!<\\/?script>).)*$', ['abc', '<script>', 'a</script>b']],
  ['(?=[A-Z])\\w+', ['Abc', 'abc', 'aB']],
  ['^\\d+(?=\\.)', ['12.5', '12', '.5']],
  ['(?<=\\$)\\d+(\\.\\d\\d)?', ['$5', '5', '$5.00']],
  ['(?!^)\\b', ['a b', 'ab', 'a']],
  ['^(?=a)(?=a$)a', ['a', 'ab']],
  ['(?<=^a)b', ['ab', 'cab', 'b']],
  // Backreferences.
  ['(a)\\1', ['aa']],
  ['(?<n>a)\\k<n>', ['aa']],
  ['\\k<n>', ['k<n>']],
  ['\\1(a)', ['a']],
  // Syntax errors.
  ['[', ['[']],
  ['\\', ['\\']],
  ['a{3', ['a{3']],
  ['\\u{110000}', ['']],
  ['\\q', ['q']],
  ['[\\q]', ['q']],
  ['\\ca', ['\x01']],
  ['\\c1', ['\\c1']],
  ['[\\c1]', ['\x11', 'c']],
  ['[\\c_]', ['\x1f']],
  ['(?<a', ['a']],
  ['a)', ['a)']],
];

// Random patterns over a tiny alphabet, mixing every kind of assertion
// with groups and quantifiers: the corners of the translation that
// hand-written cases miss. A fixed seed keeps the file stable.
function randomCases(n) {
  let seed = 12345;
  const rnd = (k) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * k);
  };
  const atoms = ['a', 'b', '[ab]', '[^a]', '.', '\\w', '\\W', '\\s', ' ', '-'];
  const asserts = ['^', '$', '\\b', '\\B'];
  const gen = (d) => {
    const r = rnd(d > 3 ? 4 : 14);
    switch (r) {
      case 0: case 1: case 2: return atoms[rnd(atoms.length)];
      case 3: return asserts[rnd(asserts.length)];
      case 4: case 5: return gen(d + 1) + gen(d + 1) + (rnd(2) ? gen(d + 1) : '');
      case 6: return gen(d + 1) + '|' + gen(d + 1);
      case 7: return '(' + gen(d + 1) + ')' + ['*', '+', '?', '{0,2}', '{1,3}', '{2}'][rnd(6)];
      case 8: return '(?:' + gen(d + 1) + '|' + gen(d + 1) + ')' + ['*', '+', '?', ''][rnd(4)];
      case 9: return '(?=' + gen(d + 1) + ')';
      case 10: return '(?!' + gen(d + 1) + ')';
      case 11: return '(?<=' + gen(d + 1) + ')';
      case 12: return '(?<!' + gen(d + 1) + ')';
      default: return '(?:' + gen(d + 1) + ')' + ['*', '+', '?'][rnd(3)];
    }
  };
  const base = [''];
  for (let len = 1; len <= 3; len++) {
    const prev = base.filter((s) => s.length === len - 1);
    for (const p of prev) for (const c of ['a', 'b', ' ']) base.push(p + c);
  }
  const out = [];
  for (let i = 0; i < n; i++) {
    const p = gen(0) + (rnd(3) ? gen(1) : '');
    const strings = base.slice();
    for (let k = 0; k < 12; k++) {
      let s = '';
      const len = 4 + rnd(5);
      for (let j = 0; j < len; j++) s += 'ab -'[rnd(4)];
      strings.push(s);
    }
    out.push([p, strings]);
  }
  return out;
}

function suiteCases() {
  const out = [];
  const files = [
    'draft2020-12/pattern.json',
    'draft2020-12/patternProperties.json',
    'draft2020-12/optional/ecmascript-regex.json',
    'draft2020-12/optional/non-bmp-regex.json',
  ];
  for (const f of files) {
    let groups;
    try {
      groups = JSON.parse(fs.readFileSync(path.join(SUITE, f), 'utf8'));
    } catch (e) {
      continue;
    }
    for (const g of groups) {
      const pats = [];
      if (typeof g.schema.pattern === 'string') pats.push(g.schema.pattern);
      if (g.schema.patternProperties) pats.push(...Object.keys(g.schema.patternProperties));
      if (g.schema.propertyNames && typeof g.schema.propertyNames.pattern === 'string') {
        pats.push(g.schema.propertyNames.pattern);
      }
      for (const p of pats) {
        const strings = [];
        for (const t of g.tests) {
          if (typeof t.data === 'string') strings.push(t.data);
          else if (t.data && typeof t.data === 'object' && !Array.isArray(t.data)) {
            strings.push(...Object.keys(t.data));
          }
        }
        out.push([p, strings]);
      }
    }
  }
  return out;
}

function mutations(strings) {
  const out = new Set(['']);
  for (const s of strings) {
    out.add(s);
    out.add(s + 'x');
    out.add('x' + s);
    out.add(s + '\n');
    if (s.length > 0) {
      const cps = [...s];
      out.add(cps.slice(0, -1).join(''));
      out.add(cps.slice(1).join(''));
      const mid = cps.length >> 1;
      for (const r of ['!', 'é', '0', ' ']) {
        const c = cps.slice();
        c[mid] = r;
        out.add(c.join(''));
      }
      out.add(s.toUpperCase());
      out.add(s.toLowerCase());
      out.add(s + s);
    }
  }
  return [...out];
}

// Some real patterns backtrack catastrophically on mutated strings: each
// test runs under a time limit and undecided strings are left out.
const vm = require('vm');
const sandbox = vm.createContext({ re: null, s: '' });
const probe = new vm.Script('re.test(s)');

function test(re, s) {
  sandbox.re = re;
  sandbox.s = s;
  try {
    return probe.runInContext(sandbox, { timeout: 300 });
  } catch (e) {
    return undefined;
  }
}

function compile(src, flags) {
  try {
    return new RegExp(src, flags);
  } catch (e) {
    return null;
  }
}

function evaluate(pattern, strings, origin) {
  let flags = 'u';
  let re = compile(pattern, 'u');
  if (!re) {
    flags = '';
    re = compile(pattern, '');
    if (!re) flags = null;
  }
  let ss = strings;
  if (flags === '') {
    // Without `u`, JavaScript sees astral characters as two units while
    // cgram keeps code points: leave such strings out.
    ss = ss.filter((s) => ![...s].some((c) => c.codePointAt(0) > 0xffff));
  }
  // Unpaired surrogates are not text.
  ss = ss.filter((s) => !/[\uD800-\uDFFF]/u.test(s));
  const full = flags === null ? null : compile('^(?:' + pattern + ')$', flags);
  const kept = [];
  let search = '';
  let whole = '';
  if (flags !== null) {
    for (const s of ss) {
      const a = test(re, s);
      const b = a === undefined ? undefined : test(full, s);
      if (a === undefined || b === undefined) continue;
      kept.push(s);
      search += a ? '1' : '0';
      whole += b ? '1' : '0';
    }
  }
  return { src: origin, p: pattern, flags, s: kept, search, full: whole };
}

const cases = [];
for (const [p, ss] of hand) cases.push(evaluate(p, mutations(ss).slice(0, 40), 'construct'));
for (const [p, ss] of suiteCases()) cases.push(evaluate(p, ss, 'suite'));
for (const [p, ss] of randomCases(600)) cases.push(evaluate(p, ss, 'random'));
const mb = JSON.parse(fs.readFileSync(path.join(__dirname, 'maskbench_patterns.json'), 'utf8'));
for (const { pattern, strings } of mb) {
  cases.push(evaluate(pattern, mutations(strings).slice(0, 40), 'maskbench'));
}
process.stdout.write('[\n' + cases.map((c) => JSON.stringify(c)).join(',\n') + '\n]\n');
