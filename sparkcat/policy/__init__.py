"""What connector configs may reach: input policy, config providers, allowed paths."""
