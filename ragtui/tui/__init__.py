"""The Textual front end. It renders engine events and calls engine operations, nothing more."""
