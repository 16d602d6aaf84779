-- The Corollary 4 table of analysis/general_index.md (run with aimsweep query DB "$(cat analysis/general_index.sql)").
SELECT t.teacher, t.d, count(*) AS seeds, sum(s.tau_wr IS NOT NULL) AS recovered,
       group_concat(round(s.tau_wr, 4), ' ') AS tau_wr,
       group_concat(round(s.samples_wr / (t.d * t.d * ln(t.d)), 2), ' ') AS n_wr_per_d2lnd,
       round(avg(s.mu_star), 3) AS mean_mu_star,
       round(avg(abs(tr.mu)), 2) AS mean_abs_mu_at_0011,
       round(avg(4 * abs(tr.mu * s.mu_star)), 2) AS mean_4_mu_mustar,
       round(avg(abs(tr.overlap)), 3) AS mean_abs_m_at_0011
FROM results s JOIN tasks t USING (task_id)
JOIN trajectory tr ON tr.task_id = s.task_id AND tr.solver = s.solver AND tr.k = 14
WHERE s.solver = 'sgd' GROUP BY t.teacher, t.d ORDER BY t.teacher, t.d;
