/*
 * duet_hang.h — hang diagnosis (duet_hang.c), driven by the failure detector's thread.
 */
#ifndef DUET_HANG_H
#define DUET_HANG_H

/* Installs DUET_HANG_SIGNAL's handler where the program left the signal at its default
 * (when the detector's thread starts), and puts the default back (when it ends). */
void duet_hang_install(void);
void duet_hang_remove(void);
/* Writes the reports asked for since the last call (the signal, or waits older than
 * DUET_HANG_REPORT_S) into the log. */
void duet_hang_reports(void);

#endif
