"""What is wrong with the agent, until it is not: a banner above everything in the
dashboard, with a warning icon and the agent's last error line (plain text, selectable).
Hidden until there is something to say (MainWindow.set_agent_problem).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QStyle

from exotray.ui.style import theme


class ProblemBanner(QFrame):
    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.setObjectName("agentProblem")
        icon = QLabel()  # (the application's style, as the window's: no sheet of its own yet)
        icon.setPixmap(self.style().standardIcon(
            QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(20, 20))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.restyle()
        self.label = QLabel(text)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.addWidget(icon)
        layout.addWidget(self.label, 1)
        self.hide()

    def restyle(self) -> None:
        """In style/theme.py's colours (again: the system's scheme changed)."""
        self.setStyleSheet(f"""
#agentProblem {{
    background: {theme.PROBLEM_BACKGROUND}; border-bottom: 1px solid {theme.PROBLEM_BORDER};
}}
#agentProblem QLabel {{ color: {theme.PROBLEM_TEXT}; font-weight: 600; }}
""")
