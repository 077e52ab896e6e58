//! Writing the profile when the program crashes (see `install`).
