"""``faastlane init DIR``: a new app that runs at once (folder or SAM template form)."""
