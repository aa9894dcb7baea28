"""PLACEHOLDER (issue 35/36 work in progress): the owner of this revision replaces this file.

Revision ID: 0014
Revises: 0013
"""

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
