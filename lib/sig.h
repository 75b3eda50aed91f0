/* Signal names, and the control letters that carry them. */
#ifndef ESV_SIG_H
#define ESV_SIG_H

/* "SIGTERM", "TERM", "term" or "15" to 15; 0 when unknown. */
int		 sig_from_name(const char *name);
/* 15 to "SIGTERM"; "SIG<n>" kept in a static buffer for unknown ones. */
const char	*sig_name(int signo);
/* The runit/s6 control letter that sends signo ('t' for SIGTERM...), or 0. */
char		 sig_to_letter(int signo);
/* Parse "SIGTERM,SIGUSR1"; unknown names are reported through warn and skipped. */
int		 sig_parse_list(const char *list, int *out, int max,
		    void (*warn)(const char *name));

#endif
