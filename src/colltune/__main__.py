"""`python -m colltune ...` is the `colltune` command (batch scripts use it)."""

from colltune.cli import main

main(prog_name="colltune")
