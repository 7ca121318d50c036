#!/usr/bin/env python3
"""Turns the JSON lines of `cgram_llama_demo compare --json` into the
Markdown table of BENCHMARKS.md.

    compare_table.py build/llama/compare.jsonl > build/llama/compare.md
"""
import json
import sys


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    if not rows:
        sys.exit("compare_table.py: no rows")
    n_vocab = rows[0]["n_vocab"]
    out = []
    out.append(
        f"| grammar (greedy, tokens) | full mask, all {n_vocab:,} candidates: cgram / llama.cpp "
        "(mean, p50) | speedup mean / p50 | end to end tok/s, grammar first: cgram / llama.cpp "
        "| end to end tok/s, check first: cgram / llama.cpp "
        "| sampler ms per generation, grammar first / check first: cgram / llama.cpp "
        "| masks equal | same text |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        masks = (
            f"{r['steps_equal']}/{r['steps_compared']} steps identical, "
            f"{r['known_only']} differ only by llama.cpp's known deviations, "
            f"{r['mismatch_tokens']} other tokens"
        )
        out.append(
            f"| {r['label']} ({r['tokens']}) "
            f"| {r['cgram_full_mean_us']:,.0f} / {r['llama_full_mean_us']:,.0f} us, "
            f"{r['cgram_full_p50_us']:,.0f} / {r['llama_full_p50_us']:,.0f} us "
            f"| {r['llama_full_mean_us'] / r['cgram_full_mean_us']:,.0f}x / "
            f"{r['llama_full_p50_us'] / r['cgram_full_p50_us']:,.0f}x "
            f"| {r['cgram_gf_tps']:.1f} / {r['llama_gf_tps']:.1f} "
            f"| {r['cgram_cf_tps']:.1f} / {r['llama_cf_tps']:.1f} "
            f"({r['cgram_cf_full']} / {r['llama_cf_full']} full masks) "
            f"| {r['cgram_gf_sampler_ms']:,.1f} / {r['llama_gf_sampler_ms']:,.1f}; "
            f"{r['cgram_cf_sampler_ms']:,.1f} / {r['llama_cf_sampler_ms']:,.1f} "
            f"| {masks} | {'yes' if r['same_text'] else 'NO'} |"
        )
    out.append("")
    out.append("Other numbers of the same runs:")
    out.append("")
    for r in rows:
        out.append(
            f"- {r['label']}: full mask max {r['cgram_full_max_us']:,.0f} us (cgram) / "
            f"{r['llama_full_max_us']:,.0f} us (llama.cpp); sampler creation "
            f"{r['cgram_init_ms']:.1f} ms / {r['llama_init_ms']:.2f} ms (cgram's vocabulary of "
            f"the model, built once per process: {r['cgram_vocab_ms']:.0f} ms); one-candidate "
            f"check {r['cgram_cf_single_mean_us']:.0f} us / {r['llama_cf_single_mean_us']:.0f} us; "
            f"accept {r['cgram_accept_mean_us']:.0f} us / {r['llama_accept_mean_us']:.0f} us; "
            f"llama.cpp's deviations summed over steps: {r['special_tokens']:,} control tokens "
            f"admitted by their text, {r['invalid_utf8_tokens']:,} never-valid UTF-8 tokens "
            f"admitted, {r['nul_tokens']:,} NUL-led tokens refused; {r['rounds']} timed rounds "
            f"(medians)."
        )
    print("\n".join(out))


if __name__ == "__main__":
    main()
