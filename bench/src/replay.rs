//! `cgram-bench replay`: one MaskBench file, again and again, each time
//! with a vocabulary whose caches are empty, so that a first-time cost (a
//! slow compile, the first mask of a new lexeme state) can be timed and
//! profiled repeatedly instead of once per run.
//!
//! Each round rebuilds the vocabulary from the loaded one (untimed), then
//! times the compile and every mask of the chosen instance up to the chosen
//! token, and prints the compile time, the chosen mask's time (or the
//! slowest masks) per round, and the minimum over rounds.

use std::path::PathBuf;

use cgram::{CompileOptions, Kind, Matcher, Vocab};

use crate::{clock_us, maskbench};

pub struct Options {
    pub tokenizer: PathBuf,
    pub file: PathBuf,
    pub test: usize,
    /// The mask to report (index of the token it is for); all masks when
    /// `None` (the slowest are printed).
    pub token: Option<usize>,
    pub repeat: usize,
    pub cpu_clock: bool,
}

pub fn run(opts: &Options) {
    let base = Vocab::from_tokenizer_json(&opts.tokenizer).unwrap_or_else(|e| {
        eprintln!("loading {}: {e}", opts.tokenizer.display());
        std::process::exit(1)
    });
    let tok = tokenizers::Tokenizer::from_file(&opts.tokenizer).unwrap_or_else(|e| {
        eprintln!("tokenizers: {e}");
        std::process::exit(1)
    });
    let file = maskbench::load_file(&opts.file, false, &tok).unwrap_or_else(|e| {
        eprintln!("{}: {e}", opts.file.display());
        std::process::exit(1)
    });
    let Some((_, ids)) = file.instances.get(opts.test) else {
        eprintln!("the file has {} instances", file.instances.len());
        std::process::exit(1)
    };
    let last = opts.token.map_or(ids.len(), |t| (t + 1).min(ids.len()));
    let options = CompileOptions {
        kind: Kind::JsonSchema,
        ..Default::default()
    };
    let cpu = opts.cpu_clock;
    let mut perf = PerfControl::from_env();
    let (mut best_compile, mut best_mask) = (f64::INFINITY, f64::INFINITY);
    for round in 0..opts.repeat {
        // The same tokens, with every per-vocabulary cache empty.
        let engine = cgram::Engine::new(base.with_eos(base.eos_tokens().to_vec()).unwrap());
        let mut mask = vec![0u32; engine.vocab().mask_words()];
        let start = clock_us(cpu);
        let grammar =
            cgram::compile(&engine, file.schema.as_bytes(), &options).unwrap_or_else(|e| {
                eprintln!("compile error: {e}");
                std::process::exit(1)
            });
        let compiled = clock_us(cpu) - start;
        let mut m = Matcher::new(grammar);
        let mut times = Vec::with_capacity(last);
        for (k, &id) in ids[..last].iter().enumerate() {
            let s = clock_us(cpu);
            if Some(k) == opts.token {
                perf.send("enable");
                chosen_mask(&mut m, &mut mask);
                perf.send("disable");
            } else {
                m.fill_mask(&mut mask).unwrap();
            }
            times.push(clock_us(cpu) - s);
            if mask[(id / 32) as usize] >> (id % 32) & 1 == 0 || m.accept(id).is_err() {
                break;
            }
        }
        best_compile = best_compile.min(compiled);
        match opts.token {
            Some(t) => {
                let us = times.get(t).copied().unwrap_or(f64::NAN);
                best_mask = best_mask.min(us);
                println!("round {round}: compile {compiled:.0} us, mask {t} {us:.1} us");
            }
            None => {
                let mut slow: Vec<(f64, usize)> = times.iter().copied().zip(0..).collect();
                slow.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
                slow.truncate(5);
                let list: Vec<String> =
                    slow.iter().map(|(us, k)| format!("{k}: {us:.0}")).collect();
                println!(
                    "round {round}: compile {compiled:.0} us, slowest masks (token: us) {}",
                    list.join(", ")
                );
            }
        }
    }
    println!("min compile {best_compile:.0} us, min mask {best_mask:.1} us");
}

/// `perf record --control fifo:CTL,ACK -D -1` started disabled: with
/// `CGRAM_PERF_CTL=CTL,ACK` in the environment, the chosen mask enables it
/// and disables it again (waiting for perf's acknowledgement each time), so
/// that a profile holds that mask alone.
struct PerfControl(Option<(std::fs::File, std::io::BufReader<std::fs::File>)>);

impl PerfControl {
    fn from_env() -> PerfControl {
        let var = std::env::var("CGRAM_PERF_CTL").ok();
        PerfControl(var.and_then(|v| {
            let (ctl, ack) = v.split_once(',')?;
            let ctl = std::fs::OpenOptions::new().write(true).open(ctl).ok()?;
            let ack = std::fs::File::open(ack).ok()?;
            Some((ctl, std::io::BufReader::new(ack)))
        }))
    }

    fn send(&mut self, command: &str) {
        use std::io::{BufRead, Write};
        if let Some((ctl, ack)) = &mut self.0 {
            let _ = writeln!(ctl, "{command}");
            let _ = ctl.flush();
            let mut line = String::new();
            let _ = ack.read_line(&mut line);
        }
    }
}

/// The chosen mask, in a frame of its own so that a profile can tell it
/// from the masks before it.
#[inline(never)]
fn chosen_mask(m: &mut Matcher, mask: &mut [u32]) {
    m.fill_mask(mask).unwrap();
}
