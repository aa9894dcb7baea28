"""PLACEHOLDER (issue 35/36 work in progress): the owner of this revision replaces this file.

Revision ID: 0015
Revises: 0014
"""

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
