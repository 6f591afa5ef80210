"""Run one agent until SIGINT or SIGTERM (what `exotray agent` does)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

from exotray.agent.runtime import Agent
from exotray.core.settings import Settings


async def run(settings: Settings, config_file: Path | None = None) -> int:
    """Run an agent until SIGINT or SIGTERM."""
    agent = Agent(settings)
    agent.config_file = config_file
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, agent.request_stop)
    try:
        await agent.start()
        await agent.wait()
    finally:
        await agent.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)
    return 0
