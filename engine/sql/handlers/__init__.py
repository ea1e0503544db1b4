"""The statement handlers of a session, one mixin per family of statements."""
