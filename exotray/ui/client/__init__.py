"""The tray app's side of its local agent, and the only way the UI reaches it.

- `localhttp`: JSON over HTTP to the agent on loopback, standard library only;
- `poll`: the worker thread that polls the agent and hands cluster views to the GUI;
- `supervisor`: starting the agent as a child process, or attaching to one that listens.
- `loss_history`: this node's links' loss of the last day, for `exotray doctor`'s checks.

May import: `style`, `exotray.core`. Must not import `exotray.agent`: the UI talks to
the agent over HTTP only.
"""
