"""A one-line text field that keeps the keys it handles itself.

Textual leaves a key to the focused widget, ahead of a screen's priority binding for it, only when the widget says
it consumes that key (`check_consume_key`); an Input says so for printable characters alone. The main screen binds
the keys that move the focus with priority (keymap.py, the note above FIELD_TABS), so a field here also claims the
keys of its own bindings: the sources filter's esc clears the filter, and an editing key such as ctrl+x stays the
field's even when a user gives an action the same key.
"""

from __future__ import annotations

from textual.widgets import Input


class TextField(Input):
    def check_consume_key(self, key: str, character: str | None) -> bool:
        return super().check_consume_key(key, character) or key in self._bindings.key_to_bindings
