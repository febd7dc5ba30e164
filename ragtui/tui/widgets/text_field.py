"""A one-line text field that keeps the keys it handles itself.

Textual leaves a key to the focused widget, ahead of a screen's priority binding for it, only when the widget says
it consumes that key (`check_consume_key`); an Input says so for printable characters alone. The main screen binds
the keys that move the focus with priority (keymap.py, the note above FIELD_TABS), so a field here also claims the
keys of its own bindings: the sources filter's esc clears the filter, and an editing key such as ctrl+x stays the
field's even when a user gives an action the same key.
"""

from __future__ import annotations

import string

from textual.keys import _character_to_key
from textual.widgets import Input

# Textual names a key by the character's name, but asks a widget about a key named differently from its Unicode name
# (`slash` is SOLIDUS) with no character at all, so `/` would reach the screen's priority binding instead of the field.
CHARACTERS = {_character_to_key(c): c for c in string.punctuation}


class TextField(Input):
    def check_consume_key(self, key: str, character: str | None) -> bool:
        return (super().check_consume_key(key, character or CHARACTERS.get(key))
                or key in self._bindings.key_to_bindings)
