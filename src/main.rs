use cgram::ffi::*;
use std::ffi::CStr;
fn cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind: u32 = match args[1].as_str() {
        "gbnf" => CG_KIND_GBNF,
        "json" => CG_KIND_JSON_SCHEMA,
        "regex" => CG_KIND_REGEX,
        _ => panic!(),
    };
    let ms: u64 = args[2].parse().unwrap();
    let reps: usize = args[3].parse().unwrap();
    let data = std::fs::read(&args[4]).unwrap();
    let flags: u32 = args.get(5).map(|s| s.parse().unwrap()).unwrap_or(0);
    let mut toks: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    toks.push(b"<|eos|>".to_vec());
    let ptrs: Vec<*const u8> = toks.iter().map(|t| t.as_ptr()).collect();
    let lens: Vec<u32> = toks.iter().map(|t| t.len() as u32).collect();
    let mut fl = vec![0u32; toks.len()];
    *fl.last_mut().unwrap() = CG_TOKEN_SPECIAL;
    let eos = [256i32];
    let v = unsafe {
        cg_vocab_new(
            toks.len() as u32,
            ptrs.as_ptr(),
            lens.as_ptr(),
            fl.as_ptr(),
            eos.as_ptr(),
            1,
        )
    };
    assert!(!v.is_null());
    for _ in 0..reps {
        let mut o = std::mem::MaybeUninit::<cg_compile_options>::uninit();
        unsafe { cg_compile_options_init(o.as_mut_ptr()) };
        let mut o = unsafe { o.assume_init() };
        o.kind = kind;
        o.max_compile_ms = ms;
        o.max_states = 50_000;
        o.flags = flags;
        let t = cpu();
        let g = unsafe { cg_compile(v, data.as_ptr().cast(), data.len(), &o) };
        let dt = cpu() - t;
        let msg = if g.is_null() {
            unsafe { CStr::from_ptr(cg_last_error()) }
                .to_string_lossy()
                .into_owned()
        } else {
            "ok".into()
        };
        println!("{dt:.1} ms: {}", &msg[..msg.len().min(200)]);
        if !g.is_null() {
            unsafe { cg_free(g) }
        }
    }
}
