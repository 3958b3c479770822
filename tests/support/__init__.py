"""What several test modules share: piles at rest (`piles`), a small falling run
(`falling`), independent reference solutions (`reference`), the shipped scenes
(`scenes`) and small systems (`systems`)."""
