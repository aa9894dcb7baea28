"""PLACEHOLDER (issue 35/36 work in progress): the owner of this revision replaces this file.

Revision ID: 0018
Revises: 0017
"""

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
