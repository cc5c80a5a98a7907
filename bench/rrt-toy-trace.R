# Where the RRT's candidates go on the 500 x 500 Laurberg toy (bench/rrt-toy.R),
# and what the online NVI makes of them: every candidate the tree offers is
# recorded (WAD to the two known solutions, log joint at the scale it is
# offered, the ELBO gain and the acceptance threshold), by wrapping the
# internal offer function for this process only.
# Run: R_LIBS=<lib> Rscript bench/rrt-toy-trace.R [seconds = 60] [rate = "auto", the default prior]
suppressMessages(library(bnmf))
ns <- asNamespace("bnmf")
args <- commandArgs(TRUE)
secs <- if (length(args) >= 1 && !is.na(args[1])) as.numeric(args[1]) else 60
rate <- if (length(args) >= 2 && !is.na(args[2])) args[2] else "auto"
if (rate != "auto") rate <- as.numeric(rate)
set.seed(2)
toy <- ns$laurberg_toy(500, noise = 0.01)
s1 <- toy$solutions[[1]]
s2 <- toy$solutions[[2]]
rec <- new.env()
rec$rows <- list()
offer <- ns$rrt_offer
traced <- function(run, theta, target, scale = TRUE) {
  p <- target$split(theta)
  th <- if (scale) ns$prior_scale(theta, target$I, target$J, target$R) else theta
  out <- offer(run, theta, target, scale)
  tr <- out$state$trace[nrow(out$state$trace), ]
  rec$rows[[length(rec$rows) + 1L]] <- data.frame(
    wad_s1 = wad(p, s1), wad_s2 = wad(p, s2), logp = target$logp(th), gain = tr$gain,
    threshold = tr$threshold, accepted = out$last_accepted, best_logp = max(out$state$f))
  out
}
unlockBinding("rrt_offer", ns)
assign("rrt_offer", traced, ns)
set.seed(3)
fit <- bnmf(toy$X, rank = 3, method = "rrt", likelihood = "uniform", init = s1, iter = 5000,
            prior = if (identical(rate, "auto")) exponential() else exponential(rate),
            control = rrt_control(epsilon = 0.3, time_limit = secs))
d <- do.call(rbind, rec$rows)
near2 <- d$wad_s2 < d$wad_s1
cat(sprintf("rate %s on X / s (%s in the units of X), %.0f s: %d candidates offered, %d nearer s2 (closest %.2f deg to s2), %d accepted (%d nearer s2)\n",
            format(signif(fit$prior$rate * sqrt(fit$data_scale), 4)),
            format(signif(fit$prior$rate, 4)), secs, nrow(d), sum(near2), min(d$wad_s2),
            sum(d$accepted), sum(d$accepted & near2)))
cat(sprintf("log joint of the candidates nearer s2: median %.1f, max %.1f; best component at the end %.1f\n",
            median(d$logp[near2]), max(d$logp[near2]), tail(d$best_logp, 1)))
