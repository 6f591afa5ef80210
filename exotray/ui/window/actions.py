"""The words of the dashboard's actions on a link (no Qt): their tooltips, what a
capacity test's result says, and the paused notice."""

from __future__ import annotations

from typing import Any

from exotray.core import fmt

EXPORT_TIP = "Save the selected link's last hour as CSV or JSON"
MEASURE_TIP = "A 2 x 5 s bulk TCP transfer over this link; the result becomes its capacity"
PAUSED_TEXT = ("Monitoring is paused: this node measures and notifies nothing, and its "
               "links show as paused. Resume it from the tray menu (Pause Monitoring).")


def measured(result: dict[str, Any], at: str) -> str:
    """A capacity test's result in one unit system (bytes/s, like the rates), the new
    capacity's link speed as a label of its own."""
    mbit = {d: result.get(f"{d}_mbit_s") for d in ("up", "down")}
    rates = {d: v * 1e6 / 8 for d, v in mbit.items() if v}
    if not rates:
        return f"Measured at {at} via {result.get('interface')}: nothing came through."
    as_bytes = ", ".join(f"{fmt.capacity_rate(v)} {d}" for d, v in rates.items())
    as_bits = ", ".join(f"{fmt.capacity_other(v)} {d}" for d, v in rates.items())
    best = max(rates.values())  # the agent keeps the larger one
    via, kept = result.get("interface"), result.get("capacity_of", result.get("interface"))
    if not kept:  # through a bridge whose cable to the peer is not known yet
        return (f"Measured at {at} via {via}: {as_bytes} ({as_bits}); not kept: which "
                f"cable of {via} reaches the peer is not known yet.")
    if result.get("override_mbit"):  # the user's own capacity for it wins (core/capacity.py)
        return (f"Measured at {at} via {via}: {as_bytes} ({as_bits}); kept for {kept}, but "
                f"your capacity setting for {kept} "
                f"({fmt.capacity_rate(result['override_mbit'] * 125_000)}) stays in force: "
                "clear it in Preferences to use the measured one.")
    whose = "its capacity" if kept == via else f"the capacity of {kept}, its cable"
    return (f"Measured at {at} via {via}: {as_bytes} ({as_bits}); now {whose}: "
            f"{fmt.capacity_rate(best)}.")
