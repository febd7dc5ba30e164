"""`ragtui serve`'s web server: textual-serve's, behind a per-start token, Host and Origin checks
(`guard`), with a cap on sessions (`server`) and a page that requests nothing from another origin
(`page`). Only `ragtui.cli.serve_cmd` imports it, when the command runs.
"""
