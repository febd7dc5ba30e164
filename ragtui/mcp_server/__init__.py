"""`ragtui mcp`: the Model Context Protocol server that lets agents search, read, ask and check quotes against
the user's collections (the `mcp` SDK is imported only when that command runs)."""
