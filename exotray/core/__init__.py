"""The core: what is worth testing with tables of cases, in plain Python.

Models and the snapshot schema (`schema`), rate and RTT statistics (`stats`), capacity
rules (`capacity`), the saturation detector (`saturation`) and queueing delay
(`queueing`), the cluster as a graph (`topology`), history rings (`history`), settings
(`settings`) and the config file as its user wrote it (`configfile`), events
(`events`), and the words and formats shared by the command line and the UI (`fmt`,
`status`, `health`, `export`, `sd`), with where files live (`paths`); `exotray doctor`'s
checks (`doctor`, over `doctor_view`: `doctor_links`, `doctor_past`, `doctor_loss`,
`doctor_nodes`).

May import: nothing of exotray. No Qt, no sockets, no clock of its own: a clock is passed
in. Everything else may import it.
"""
