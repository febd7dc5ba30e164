"""A research session as a bibliography (BibTeX, CSL-JSON) and the quote checks of its Markdown export."""
