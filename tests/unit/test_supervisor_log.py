"""The tray reads the agent's last error line by the agent's own log format: a line
written with settings.LOG_FORMAT must be what the supervisor's parser recognises."""

from __future__ import annotations

import logging

from exotray.core.settings import LOG_FORMAT


def test_the_supervisor_parses_what_the_agent_writes():
    from exotray.ui.client.supervisor import problem_line

    rec = logging.LogRecord("exotray.agent.runtime", logging.WARNING, __file__, 1,
                            "cannot use state dir %s: Read-only file system", ("/x",), None)
    line = logging.Formatter(LOG_FORMAT).format(rec)
    assert problem_line(["noise", line]) == "cannot use state dir /x: Read-only file system"
