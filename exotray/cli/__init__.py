"""The command line.

- `main`: the entry point, and the commands that start something (the tray app, the
  agent, the demo);
- `args`: every sub-command's parser, and the agent's settings from options and config;
- `reads`: the commands that ask the local agent over HTTP (`status`, `interfaces`,
  `export`, `measure`, `prometheus-sd`);
- `doctor`: `exotray doctor`, the checks of `exotray.core.doctor` over the agent's view;
  `doctor_active`: its `--active` tests (measure's capacity test, with consent);
- `display`: whether the tray app and the demo have a display that answers, asked
  before Qt (which aborts the process without one).

May import: `exotray.core`; `exotray.agent` and `exotray.ui` only inside the commands
that run them, so that a short command loads neither Qt nor the agent.
"""
