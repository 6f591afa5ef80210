"""One link in the window, and the words for what its numbers rest on.

- `view`: the details panel of the selected link, assembled from
- `charts` (latency and traffic over time), `chart_data` (what the charts hold and must
  ask the agent for), `chart_style`, `chart_cursor` (the crosshair's read-out), and
  `numbers` (its current numbers);
- `table` over `model`: every link of every node, one sortable row each;
- `words`: which interface (and bridge member) carries a link, whose traffic it is.

May import: `style`, `exotray.core`.
"""
