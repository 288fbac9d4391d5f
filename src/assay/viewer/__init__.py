"""`assay view`: a local, read-only web viewer over a round store.

A second front end beside the CLI: it reads through `assay.validator.api` (every
call opens the store read-only) and renders with `assay.report`, so a round's page
is the HTML report itself.
"""
