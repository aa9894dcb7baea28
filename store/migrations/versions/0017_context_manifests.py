"""PLACEHOLDER (issue 35/36 work in progress): the owner of this revision replaces this file.

Revision ID: 0017
Revises: 0016
"""

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
