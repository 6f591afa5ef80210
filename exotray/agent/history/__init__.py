"""The agent's history on disk, and where its events go.

- `schema`: the SQLite database's tables per kind and tier, its version and migrations;
- `db`: reads and writes of that database (WAL, tiers, retention);
- `store`: the one worker thread that does all SQLite work, off the event loop;
- `daycap`: at most so many events of a peer a day go to the database, across restarts;
- `backlog`: what the database has not got yet (a full disk): written when it can, read
  from the rings meanwhile;
- `eventsink`: events to the log and to the `--events` file (JSON lines, bounded).

May import: `peers`, `hw` (their types), `base`, `exotray.core`. Must not import `probe`,
`exo`, `share`, `http` or the agent's assembly.
"""
