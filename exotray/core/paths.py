"""Where exotray keeps its files (platformdirs), shared by the agent, the CLI and the UI."""

from __future__ import annotations

from pathlib import Path

import platformdirs

APP = "exotray"
#: the local control token's file name in the state dir (mode 0600)
TOKEN_FILE = "control_token"
#: held (flock) by the agent that uses the state dir, for its whole life
LOCK_FILE = "lock"


def config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def state_dir() -> Path:
    return Path(platformdirs.user_state_dir(APP))


def read_token(state: Path) -> str | None:
    try:
        return (state / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None
