"""The cluster map (pyqtgraph): nodes on a circle, one edge per link, coloured by load.

`view` assembles it from its parts: `layout` (where nodes and edges go, pure), `edges`
(one batch of lines per colour), `badges` ("MB/s · ms"), `labels` (node names), `halos`
(selection, hover, exo's traffic), `legend`, `tips` (tooltips) and `hits` (what the mouse
is over).

May import: `link` (its words), `style`, `exotray.core`.
"""
