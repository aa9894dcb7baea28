"""PLACEHOLDER (issue 35/36 work in progress): the owner of this revision replaces this file.

Revision ID: 0016
Revises: 0015
"""

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
