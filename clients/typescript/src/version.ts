/** The client's version: the repository's VERSION (a test holds them equal). */
export const VERSION = "0.1.0";
