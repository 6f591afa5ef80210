"""The dashboard window (`dashboard`): the topology, the selected link's details, the
table of links and the cluster's events on a timeline (`timeline`), what is wrong with
the agent (or that monitoring is paused) in a banner above them (`banner`), the words
of the actions on a link (`actions`); and the Preferences dialog (`preferences`),
which shows what is wrong in a config file the agent refused (`config_problems`).

May import: `topology`, `link`, `tray` (its words and start at login), `client`, `style`,
`exotray.core`.
"""
