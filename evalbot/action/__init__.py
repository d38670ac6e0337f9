"""The GitHub Action: settings from the environment, the two stages, publishing, runner I/O."""
