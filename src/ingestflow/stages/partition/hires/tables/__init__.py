"""High Res tables: where they are on a page, their structure, their cells' words, and a table
continued on the next page.

Modules: `finding` (where tables are), `reading` (a region read as a table), `promotion`
(figure and text regions that are tables), `blocks` (a table inside a larger region), `model`
(the table structure model, SLANet-1M), `structure` (its HTML), `grid` (a table from word gaps
and ruling lines), `rules` (rows fitted to the rules a table draws), `cells` (a cell's words),
`merge` (a table continued on the next page).
"""
