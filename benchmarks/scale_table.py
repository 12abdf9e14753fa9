"""The table ``bench_scale.py`` prints: one row per measurement, then its floor, stage and
pair lines (imported as ``scale_table`` when the benchmark runs as ``python
benchmarks/bench_scale.py``)."""

from __future__ import annotations

#: The stages summed into a row's total.
STAGES = ("collect", "reconstruct", "train")


def fmt(value, unit: str = "s", width: int = 9) -> str:
    if value is None:
        return f"{'-':>{width}}"
    if unit == "s":
        return f"{value:>{width - 1}.2f}s"
    return f"{value / 1024:>{width - 3}.2f} GiB"


def pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def print_table(rows: list[dict], header: bool = True) -> None:
    head = (
        f"{'n':>9} {'path':<8} {'workers':>7} {'1-bits':>12} {'collect':>9} {'(cpu)':>9} "
        f"{'reconstr':>9} "
        f"{'train':>9} {'total':>9} {'peak RSS':>12} {'worker RSS':>12} {'bare scan':>9} "
        f"{'(c+r)/scan':>10} {'join':>5} {'test acc':>8} {'floor':>6}"
    )
    if header:
        print(head)
        print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['n']:>9} {r['mode']:<8} failed: {r['error']}")
            continue
        stages = [r.get(f"{s}_s") for s in STAGES]
        total = sum(s for s in stages if s is not None)
        scan = r.get("scan_s")
        c_r = (r.get("collect_s") or 0) + (r.get("reconstruct_s") or 0)
        measured = r["mode"] == "new" and scan and r.get("reconstruct_s") is not None
        ratio = f"{c_r / scan:>9.1f}x" if measured else f"{'-':>10}"
        workers = r.get("workers", "-")
        if r.get("mu") is not None and r["mu"] < 1:
            print(f"{'':>9} hogs-arr: μ = {r['mu']:.4g} (each reported 1 kept with μ)")
        print(
            f"{r['n']:>9} {r['mode']:<8} {workers:>7} {r.get('reported_ones', 0):>12} "
            + f"{fmt(stages[0])} {fmt(r.get('collect_cpu_s'))} "
            + " ".join(fmt(s) for s in stages[1:])
            + f" {fmt(total)} {fmt(r.get('peak_rss_mib'), 'm', 12)}"
            + f" {fmt(r.get('worker_peak_rss_mib') or None, 'm', 12)} {fmt(scan)} {ratio}"
            + f" {r.get('join') or '-':>5} {pct(r.get('test_accuracy')):>8}"
            + f" {pct(r.get('floor_accuracy')):>6}",
            flush=True,
        )
        if r.get("floor_s") is not None:
            print(f"{'':>9} floor (features-only, MLP): {r['floor_s']:.2f}s, τ = {r['tau']:.6g}")
        parts = [
            f"{name} {r[f'{name}_s']:.1f}s (cpu {r[f'{name}_cpu_s']:.1f}s, peak "
            f"{r[f'{name}_peak_mib'] / 1024:.2f} GiB)"
            for name in ("generate", "release", "train", "floor")
            if r.get(f"{name}_cpu_s") is not None
        ]
        if parts:
            print(f"{'':>9} stages: " + "; ".join(parts) + f"; {r.get('epochs')} epochs")
        if r.get("kept_pairs") is not None:
            print(
                f"{'':>9} pairs: {r.get('joined_pairs')} joined, {r['kept_pairs']} kept "
                f"(P >= min(τ, 0.5)), {r.get('synthetic_edges')} edges; process CPU "
                f"{r.get('process_cpu_s', '-')} s"
            )
