"""`kerneldiff info TRACE…`: the probe result, then a load summary per trace."""

from __future__ import annotations

from .args import add_device, add_loading

# The text helpers are imported where tables are drawn: `info --json` never loads them. Text and
# tables come from `render.kit()`: Rich's on a terminal, else the plain layout (Rich's bytes without
# importing Rich's console: ~16 ms of a run's start)


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="probe and load traces, print a summary")
    p.add_argument("traces", nargs="+", help="trace files (.json or .json.gz)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--probe-only", action="store_true", help="only read the head of each file")
    add_loading(p)
    add_device(p, help="a file holding several GPUs: summarise this device (default: the first)")


def probe_table(info, kit):
    """The probe's readings as a two-column table, in `kit`'s Text and Table."""
    from .render import size

    Text, literal = kit.Text, kit.literal
    t = kit.Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    t.add_row("file", literal(info.path))
    t.add_row("kind", info.kind)
    t.add_row("size", f"{size(info.size)}" + (" (gzip)" if info.compressed else ""))
    t.add_row("GPU", literal(info.gpu or "unknown") + Text(f"  [{info.vendor}]"))
    if info.device:
        d = info.device
        props = [f"{k}={d[k]}" for k in ("computeMajor", "computeMinor", "numSms", "warpSize") if k in d]
        if info.memory_gb:
            props.append(f"memory={info.memory_gb} GB")
        t.add_row("device", literal(", ".join(props)) + Text(f"  ({info.device_count} devices)"))
    if info.runtime:
        t.add_row("runtime", literal(", ".join(f"{k}={v}" for k, v in info.runtime.items())))
    if info.distributed:
        t.add_row("distributed", literal(", ".join(f"{k}={v}" for k, v in info.distributed.items())))
    t.add_row("recorded", f"Python stacks {_yes_no(info.with_stack)} · input shapes {_yes_no(info.record_shapes)}")
    if info.aie_cores:
        t.add_row("AIE cores", literal(", ".join(info.aie_cores)))
    return t


def wall_line(w, gpu_time_us: float, kit):
    """What `compare` leads with, for one trace: its wall clock, how much of it the GPU was idle
    (and why, as far as the host shows), then the kernel time."""
    from kerneldiff.core.report import format as fmt

    t = kit.Text(f"wall clock {fmt.us(w.wall_us)}", style="bold")
    idle = w.idle_us
    share = f" ({fmt.pct(idle / w.wall_us, 0)})" if w.wall_us > 0 else ""
    t.append(f"   idle {fmt.us(idle)}{share}")
    if idle > 0:
        t.append(f": launch-bound {fmt.us(w.launch_bound_us)}, sync waits {fmt.us(w.sync_us)}, "
                 f"other {fmt.us(w.other_us)}", style="dim")
    t.append(f"   kernel time {fmt.us(gpu_time_us)}")
    return t


def _yes_no(flag: bool | None) -> str:
    """with_stack / record_shapes as words; None: the trace's metadata does not say."""
    return "not recorded in the metadata" if flag is None else ("yes" if flag else "no")


def _step_phases(phases: dict) -> str:
    """{'prefill': 1, 'decode': 47} -> 'prefill 1, decode 47'."""
    return ", ".join(f"{k} {v:,}" for k, v in phases.items())


def run(args) -> int:
    from kerneldiff.core.session import Session

    results = []
    k = None   # the text output's kit, made for the first table drawn
    for path in args.traces:
        session = Session([path], registry=args.registry, use_cache=not args.no_cache, device=args.device)
        info = session.probe()[0]
        entry = {"probe": info.to_dict()}
        if not args.probe_only and info.kind != "aie":
            session.load(0)
            entry["summary"] = session.summary(0)
        results.append(entry)
        if args.json:
            continue
        from .render import kit, us

        k = k or kit()
        out, Text, literal = k.console, k.Text, k.literal
        out.print(probe_table(info, k))
        if "summary" not in entry:
            out.print()
            continue
        s = entry["summary"]
        out.print(wall_line(s.wall, s.gpu_time_us, k))
        phases = f" ({_step_phases(s.step_phases)})" if s.step_phases else ""
        out.print(Text(f"kernels {s.kernels:,}   GPU time {us(s.gpu_time_us)}   steps {s.steps:,}"
                       f"{phases}   architecture {s.architecture}   "
                       f"layers/step {s.layers_per_step}   loaded in {s.load_seconds:.2f} s"))
        if len(s.devices) > 1:
            out.print(Text(f"devices {len(s.devices)}: " + "; ".join(
                f"{d.device}: {d.kernels:,} kernels, {us(d.gpu_time_us)}" for d in s.devices)
                + f"   (figures above and below: device {s.device})"))
        for what in ("passes", "phases", "layers"):
            out.print(Text(f"{what:7} read from ", style="dim") + literal(getattr(s.sources, what) or "—"))
        shapes = s.step_shapes
        if shapes:
            # the annotation omits what it did not record
            first = ["unknown" if v is None else v for v in (shapes[0].requests, shapes[0].tokens, shapes[0].kv_tokens)]
            out.print(Text(f"step shapes ({len(shapes)} step{'' if len(shapes) == 1 else 's'}; first: requests "
                           f"{first[0]}, tokens {first[1]}, KV tokens {first[2]})"))
        ops = k.Table(title="top operations", title_justify="left")
        ops.add_column("operation")
        ops.add_column("kernels", justify="right")
        ops.add_column("GPU time", justify="right")
        ops.add_column("share", justify="right")
        for r in s.operations[:12]:
            ops.add_row(literal(r.category), f"{r.count:,}", us(r.total_us), f"{r.share:.1%}")
        out.print(ops)
        for w in s.warnings:
            out.print(Text("warning: ", style="yellow") + literal(w))
        out.print()
    if args.json:
        from kerneldiff.core.numbers import strict_json

        print(strict_json(results if len(results) > 1 else results[0], indent=2))
    return 0
